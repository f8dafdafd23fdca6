package sqlstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// chunk is a row of weft_checkpoint_chunks: count items, stored as their
// JSON joined by commas (a JSON array without its brackets), and the byte
// length of each item as unsigned varints, so a prefix can be cut without
// parsing JSON.
type chunk struct {
	start, count int64
	fmt          int64
	items, sizes []byte
}

func encodeChunk(items []json.RawMessage) (data, sizes []byte) {
	n := 0
	for _, it := range items {
		n += len(it) + 1
	}
	data = make([]byte, 0, n)
	sizes = make([]byte, 0, len(items)*2)
	for i, it := range items {
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, it...)
		sizes = binary.AppendUvarint(sizes, uint64(len(it)))
	}
	return data, sizes
}

// prefix returns the bytes of the first k items. The item sizes are
// checked against the data even when all items are wanted.
func (c *chunk) prefix(k int64) ([]byte, error) {
	if k == c.count {
		data, err := c.cut(k)
		if err == nil && len(data) != len(c.items) {
			err = fmt.Errorf("item sizes add up to %d bytes, the chunk has %d", len(data), len(c.items))
		}
		return data, err
	}
	return c.cut(k)
}

func (c *chunk) cut(k int64) ([]byte, error) {
	if k < 0 || c.count < 0 {
		return nil, fmt.Errorf("item count %d is negative", min(k, c.count))
	}
	end := 0
	sz := c.sizes
	for i := int64(0); i < k; i++ {
		n, w := binary.Uvarint(sz)
		if w <= 0 {
			return nil, fmt.Errorf("item sizes end after %d of %d items", i, c.count)
		}
		sz = sz[w:]
		if i > 0 {
			end++ // the comma between items
		}
		// Compared as unsigned before adding: a stored size of 2^63 or
		// more would be negative as an int, and a sum could wrap.
		if end > len(c.items) || n > uint64(len(c.items)-end) {
			return nil, fmt.Errorf("item %d of %d bytes runs past the chunk's %d bytes", i, n, len(c.items))
		}
		end += int(n)
	}
	return c.items[:end], nil
}

// sizesPrefix returns the encoded sizes of the first k items.
func (c *chunk) sizesPrefix(k int64) ([]byte, error) {
	sz := c.sizes
	n := 0
	for i := int64(0); i < k; i++ {
		_, w := binary.Uvarint(sz[n:])
		if w <= 0 {
			return nil, fmt.Errorf("item sizes end after %d of %d items", i, c.count)
		}
		n += w
	}
	return c.sizes[:n:n], nil
}
