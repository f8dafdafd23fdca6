package sqlstore

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// Value formats: the fmt column of a row holding JSON.
const (
	// formatV1 is JSON as written.
	formatV1 = 1
	// formatFlate is JSON compressed with DEFLATE (RFC 1951). SQLite does
	// not compress what it stores, and message lists are mostly text, so
	// values of compressLimit bytes or more are stored compressed when that
	// saves at least a tenth.
	formatFlate = 2
)

const compressLimit = 512

var writers = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

var readers = sync.Pool{New: func() any { return flate.NewReader(nil) }}

// encode returns the stored form of a JSON value and its format.
func encode(v []byte) ([]byte, int) {
	if len(v) < compressLimit {
		return v, formatV1
	}
	var buf bytes.Buffer
	buf.Grow(len(v) / 2)
	w := writers.Get().(*flate.Writer)
	w.Reset(&buf)
	_, err := w.Write(v)
	if err == nil {
		err = w.Close()
	}
	writers.Put(w)
	if err != nil || buf.Len() > len(v)-len(v)/10 {
		return v, formatV1
	}
	return buf.Bytes(), formatFlate
}

// decode returns the JSON a stored value holds.
func decode(data []byte, format int64) ([]byte, error) {
	switch format {
	case formatV1:
		return data, nil
	case formatFlate:
		r := readers.Get().(io.ReadCloser)
		defer readers.Put(r)
		if err := r.(flate.Resetter).Reset(bytes.NewReader(data), nil); err != nil {
			return nil, err
		}
		out, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("decompressing: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("format version %d is unknown to this build, which reads %d and %d", format, formatV1, formatFlate)
}
