package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// h1Client is the runs mode's HTTP/1.1 client: one keep-alive connection
// used by one goroutine, which writes each request in one write and reads
// the answer itself through one buffer.
//
// net/http's Transport gives every connection a reading and a writing
// goroutine and hands each request and answer between them and the
// caller; on this machine, where the generator shares two cores with the
// server, those hand-offs (futex wake-ups) and the extra reads were most of
// the generator's CPU per run. This client does only what the generator
// needs: POST with a body, answers framed by Content-Length, chunked
// transfer coding or the connection's end, keep-alive and Connection:
// close, http and https. Anything else in an answer is an error.
type h1Client struct {
	dial       dialFunc
	addr       string      // host:port to dial
	tlsConfig  *tls.Config // nil for http
	hostHeader []byte
	authHeader []byte // "Authorization: Basic ...\r\n" when the URL holds user info
	bufSize    int

	conn         net.Conn
	br           *bufio.Reader
	wbuf         []byte
	exchanges    int       // answers read whole on conn: more than 0 means conn is kept
	idleSince    time.Time // when conn's last answer was read whole
	deadline     time.Time // bound on the current requests (zero: none)
	connDeadline time.Time // the deadline last set on conn
	dials        int       // connections opened, for tests

	// The current answer's body.
	keep    bool // the connection may carry the next request once the body is read
	mode    bodyMode
	left    int64 // bytes left in the body (bodyLength) or the current chunk (bodyChunked)
	inChunk bool  // a chunk's data has begun: its CRLF is still to read
	done    bool  // the body was read to its end
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

type bodyMode int

const (
	bodyLength  bodyMode = iota // Content-Length bytes (0 for 1xx, 204, 304)
	bodyChunked                 // chunked transfer coding
	bodyToClose                 // until the server closes the connection
)

// maxHead bounds an answer's status line and headers.
const maxHead = 1 << 20

// newH1Client returns a client for the server at base (http or https; its
// path is the prefix of every request's path), reading through a buffer
// of bufSize bytes.
func newH1Client(base *url.URL, dial dialFunc, bufSize int) *h1Client {
	c := &h1Client{dial: dial, addr: base.Host, bufSize: bufSize}
	port := "80"
	if base.Scheme == "https" {
		port = "443"
		c.tlsConfig = &tls.Config{ServerName: base.Hostname()}
	}
	if base.Port() == "" {
		c.addr = net.JoinHostPort(base.Hostname(), port)
	}
	c.hostHeader = []byte(base.Host)
	if base.User != nil {
		p, _ := base.User.Password()
		c.authHeader = []byte("Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(base.User.Username()+":"+p)) + "\r\n")
	}
	return c
}

// maxIdle is how long a kept connection may sit idle and still carry the
// next request. A server may close an idle connection (Node's default
// keep-alive timeout is 5 s); net/http's Transport notices that from its
// reading goroutine and dials anew, but this client has none, so it
// replaces a connection idle for longer than this instead. A client does
// its runs back to back, so in practice its connection idles for
// microseconds.
const maxIdle = time.Second

// post sends a POST of body to path and reads the answer's status line and
// headers, returning the status; the body is then read with Read, and
// finish must be called once the caller is done with it. Any error leaves
// the connection closed; a request is never sent twice.
func (c *h1Client) post(path []byte, body []byte, accept string) (int, error) {
	if c.conn != nil && c.exchanges > 0 && time.Since(c.idleSince) > maxIdle {
		c.close()
	}
	if c.conn == nil {
		if err := c.connect(); err != nil {
			return 0, err
		}
	}
	status, err := c.exchange(path, body, accept)
	if err != nil {
		c.close()
		return 0, err
	}
	return status, nil
}

func (c *h1Client) connect() error {
	ctx := context.Background()
	if !c.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.deadline)
		defer cancel()
	}
	conn, err := c.dial(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	if c.tlsConfig != nil {
		conn = tls.Client(conn, c.tlsConfig)
	}
	c.conn, c.exchanges, c.connDeadline, c.dials = conn, 0, time.Time{}, c.dials+1
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, c.bufSize)
	} else {
		c.br.Reset(conn)
	}
	return nil
}

// exchange writes one request and reads the answer's head.
func (c *h1Client) exchange(path, body []byte, accept string) (int, error) {
	if c.deadline != c.connDeadline {
		if err := c.conn.SetDeadline(c.deadline); err != nil {
			return 0, err
		}
		c.connDeadline = c.deadline
	}
	// The headers net/http's Transport sends, in its order, so that the
	// server parses the same request as it did.
	w := append(c.wbuf[:0], "POST "...)
	w = append(w, path...)
	w = append(w, " HTTP/1.1\r\nHost: "...)
	w = append(w, c.hostHeader...)
	w = append(w, "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: "...)
	w = strconv.AppendInt(w, int64(len(body)), 10)
	w = append(w, "\r\nAccept: "...)
	w = append(w, accept...)
	w = append(w, "\r\n"...)
	w = append(w, c.authHeader...)
	w = append(w, "Content-Type: application/json\r\n\r\n"...)
	w = append(w, body...)
	c.wbuf = w
	if _, err := c.conn.Write(w); err != nil {
		return 0, fmt.Errorf("sending the request: %w", err)
	}
	return c.readHead()
}

// readHead reads the answer's status line and headers (skipping 1xx
// interim answers) and sets up the reading of its body.
func (c *h1Client) readHead() (status int, err error) {
	read := 0
	for {
		line, err := c.readLine(&read)
		if err != nil {
			if read == 0 && (err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
				return 0, fmt.Errorf("the server closed the connection without answering: %w", err)
			}
			return 0, fmt.Errorf("reading the answer's status line: %w", err)
		}
		// HTTP/1.x SP 3DIGIT [SP reason]
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
			return 0, fmt.Errorf("not an HTTP/1.x status line: %.100q", line)
		}
		minor := line[7]
		status, err = strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 {
			return 0, fmt.Errorf("bad status in %.100q", line)
		}
		c.keep = minor != '0' // HTTP/1.0 keeps the connection only when it says so
		c.mode, c.left, c.inChunk, c.done = bodyToClose, 0, false, false
		length, chunked := int64(-1), false
		for {
			line, err := c.readLine(&read)
			if err != nil {
				return 0, fmt.Errorf("reading the answer's headers: %w", err)
			}
			if len(line) == 0 {
				break
			}
			i := bytes.IndexByte(line, ':')
			if i <= 0 {
				return 0, fmt.Errorf("bad header line %.100q", line)
			}
			name, value := line[:i], bytes.Trim(line[i+1:], " \t")
			switch {
			case bytes.EqualFold(name, []byte("Content-Length")):
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 || (length >= 0 && n != length) {
					return 0, fmt.Errorf("bad Content-Length %q", value)
				}
				length = n
			case bytes.EqualFold(name, []byte("Transfer-Encoding")):
				if !bytes.EqualFold(value, []byte("chunked")) || chunked {
					return 0, fmt.Errorf("unsupported Transfer-Encoding %q", value)
				}
				chunked = true
			case bytes.EqualFold(name, []byte("Connection")):
				for tok := range bytes.SplitSeq(value, []byte(",")) {
					tok = bytes.Trim(tok, " \t")
					if bytes.EqualFold(tok, []byte("close")) {
						c.keep = false
					} else if bytes.EqualFold(tok, []byte("keep-alive")) && minor == '0' {
						c.keep = true
					}
				}
			}
		}
		switch {
		case status == 101:
			return 0, errors.New("the server switched protocols (HTTP 101)")
		case status < 200:
			continue // an interim answer; the final one follows
		case status == 204 || status == 304:
			c.mode, c.left = bodyLength, 0
		case chunked:
			c.mode = bodyChunked
			if length >= 0 {
				c.keep = false // both framings: trust neither for the next answer
			}
		case length >= 0:
			c.mode, c.left = bodyLength, length
		default:
			c.keep = false
		}
		return status, nil
	}
}

// readLine returns the next line of the answer's head without its line
// ending, counting the head's bytes in *read.
func (c *h1Client) readLine(read *int) ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	*read += len(line)
	if err == bufio.ErrBufferFull || *read > maxHead {
		return nil, fmt.Errorf("the answer's head is longer than %d bytes", min(c.bufSize, maxHead))
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// Read reads the current answer's body; it returns io.EOF at its end and
// io.ErrUnexpectedEOF when the connection ends before it.
func (c *h1Client) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	switch c.mode {
	case bodyToClose:
		n, err := c.br.Read(p)
		if err == io.EOF {
			c.done = true
		}
		return n, err
	case bodyLength:
		if c.left == 0 {
			c.done = true
			return 0, io.EOF
		}
		if int64(len(p)) > c.left {
			p = p[:c.left]
		}
		n, err := c.br.Read(p)
		c.left -= int64(n)
		if err == io.EOF {
			err = fmt.Errorf("the connection ended %d bytes before the body's end: %w", c.left, io.ErrUnexpectedEOF)
		}
		return n, err
	}
	for c.left == 0 {
		if err := c.nextChunk(); err != nil {
			return 0, err
		}
		if c.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if err == io.EOF {
		err = fmt.Errorf("the connection ended inside a chunk: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

// nextChunk reads the end of the chunk just read, if any, and the next
// chunk's size line; at the last chunk it reads the trailers and marks the
// body done.
func (c *h1Client) nextChunk() error {
	read := 0
	if c.inChunk {
		line, err := c.chunkLine(&read)
		if err != nil {
			return err
		}
		if len(line) != 0 {
			return fmt.Errorf("chunk longer than its size, %.40q follows it", line)
		}
		c.inChunk = false
	}
	line, err := c.chunkLine(&read)
	if err != nil {
		return err
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i] // a chunk extension
	}
	size, err := strconv.ParseInt(string(bytes.TrimRight(line, " \t")), 16, 64)
	if err != nil || size < 0 {
		return fmt.Errorf("bad chunk size line %.40q", line)
	}
	if size > 0 {
		c.left, c.inChunk = size, true
		return nil
	}
	for { // trailers, up to a blank line
		line, err := c.chunkLine(&read)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			c.done = true
			return nil
		}
	}
}

func (c *h1Client) chunkLine(read *int) ([]byte, error) {
	line, err := c.readLine(read)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("the connection ended between chunks: %w", io.ErrUnexpectedEOF)
	}
	return line, err
}

// finish ends the current answer: the connection carries the next request
// when the body was read to its end and the server keeps it, else it is
// closed.
func (c *h1Client) finish() {
	if c.conn == nil {
		return
	}
	if c.done && c.keep {
		c.exchanges++
		c.idleSince = time.Now()
		return
	}
	c.close()
}

func (c *h1Client) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
