package main

import (
	"bufio"
	"bytes"
	"io"
)

// sseReader reads server-sent events without allocating per event: the
// event name, data and id live in buffers reused from one event to the
// next, valid until the following call to next.
type sseReader struct {
	r     *bufio.Reader
	event []byte
	data  []byte
	id    []byte
	long  []byte // a line longer than the bufio buffer, pieced together
}

// newSSEReader reads r through a buffer of size bytes; a longer line is
// pieced together in a buffer of its own.
func newSSEReader(r io.Reader, size int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, size)}
}

// reset points the reader at a new stream, keeping its buffers.
func (s *sseReader) reset(r io.Reader) {
	s.r.Reset(r)
	s.event, s.data, s.id = s.event[:0], s.data[:0], s.id[:0]
}

// next reads the next event. Data lines are joined with "\n", as the SSE
// standard says (the reference server pretty-prints its JSON over many data
// lines). An event without a name and without data (a bare id, a comment)
// is skipped. It returns io.EOF when the stream ends cleanly between events.
func (s *sseReader) next() error {
	s.event, s.data = s.event[:0], s.data[:0]
	fields := false // the event so far has a name or data
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && fields {
				return nil // the last event had no blank line after it
			}
			return err
		}
		if len(line) == 0 {
			if fields {
				return nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment: a keep-alive
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "event":
			s.event = append(s.event[:0], value...)
			fields = true
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData, fields = true, true
		case "id":
			s.id = append(s.id[:0], value...)
		}
	}
}

// readLine returns the next line without its line ending; the slice is
// valid until the next read.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}
