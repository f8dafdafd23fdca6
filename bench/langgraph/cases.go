package main

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// benchCase is one benchmark case: a name shared with bench.mjs, the number
// of updates events LangGraph.js streams for it, and a builder for a fresh
// graph and its input (called before every run, outside the timed region).
type benchCase struct {
	name   string
	events int
	build  func() (*graph.Graph, graph.Update, error)
}

// cases returns the 16 cases of bench.mjs, in its order. With small set,
// the same shapes run on small sizes (for tests), with the event counts
// those sizes give.
func cases(small bool) []benchCase {
	// Sizes: full (as bench.mjs) or small.
	size := func(full, sm int) int {
		if small {
			return sm
		}
		return full
	}
	seqLong := size(1000, 20)
	fan10, fan100 := size(10, 3), size(100, 5)
	react10, react100 := size(10, 2), size(100, 4)
	type wide struct{ n, outer, inner, events int }
	w1 := wide{300, 5, 5, 36}
	w2 := wide{600, 3, 5, 42}
	w3 := wide{1200, 3, 3, 42}
	if small {
		// messages grows 1, 2, 6, 19, 60, 189, ... per loop of six nodes.
		w1 = wide{5, 2, 2, 12}
		w2 = wide{20, 2, 1, 24}
		w3 = wide{100, 1, 2, 30}
	}

	saver := func(ckpt bool) *checkpoint.Saver {
		if ckpt {
			return checkpoint.NewMemory()
		}
		return nil
	}
	seq := func(n int) benchCase {
		return benchCase{"sequential_" + strconv.Itoa(n), n, func() (*graph.Graph, graph.Update, error) { return sequential(n) }}
	}
	fan := func(label string, k int, ckpt bool) benchCase {
		return benchCase{"fanout_to_subgraph_" + label + suffix(ckpt), k, func() (*graph.Graph, graph.Update, error) {
			return fanoutToSubgraph(k, saver(ckpt))
		}}
	}
	react := func(label string, n int, ckpt bool) benchCase {
		return benchCase{"react_agent_" + label + suffix(ckpt), 2*n + 1, func() (*graph.Graph, graph.Update, error) {
			return reactAgent(n, saver(ckpt))
		}}
	}
	wd := func(label string, w wide, ckpt bool) benchCase {
		return benchCase{"wide_dict_" + label + suffix(ckpt), w.events, func() (*graph.Graph, graph.Update, error) {
			return wideDict(w.n, w.outer, w.inner, saver(ckpt))
		}}
	}
	all := []benchCase{
		seq(10),
		seq(seqLong),
		fan("10x", fan10, false),
		fan("10x", fan10, true),
		fan("100x", fan100, false),
		fan("100x", fan100, true),
		react("10x", react10, false),
		react("10x", react10, true),
		react("100x", react100, false),
		react("100x", react100, true),
		wd("25x300", w1, false),
		wd("25x300", w1, true),
		wd("15x600", w2, false),
		wd("15x600", w2, true),
		wd("9x1200", w3, false),
		wd("9x1200", w3, true),
	}
	if small {
		// Keep the names of the full cases, so tests address them alike.
		all[1].name = "sequential_1000"
	}
	return all
}

func suffix(ckpt bool) string {
	if ckpt {
		return "_checkpoint"
	}
	return ""
}

const letters = "abcdefghijklmnopqrstuvwxyz"

// letterSource draws random letters the way bench.mjs does, one cheap
// non-cryptographic step a letter: V8's Math.random is xorshift128+, while
// math/rand/v2's top-level functions run ChaCha8, which cost the wide_dict
// nodes a third of a run. It is wyrand, seeded from math/rand/v2 once per
// string, so parallel tasks share no state.
type letterSource uint64

func newLetterSource() letterSource { return letterSource(rand.Uint64()) }

// letter returns a letter's index in letters.
func (s *letterSource) letter() int {
	*s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(uint64(*s), uint64(*s)^0xe7037ed1a0b428db)
	// The top 32 bits scaled to [0, 26), as Math.floor(Math.random() * 26).
	return int(((hi ^ lo) >> 32 * uint64(len(letters))) >> 32)
}

// randLetters returns n random lowercase letters, each a one-letter string
// (bench.mjs's randLetters).
func randLetters(n int) []string {
	src := newLetterSource()
	out := make([]string, n)
	for i := range out {
		j := src.letter()
		out[i] = letters[j : j+1]
	}
	return out
}

// randString returns n random lowercase letters (bench.mjs's randString).
func randString(n int) string {
	src := newLetterSource()
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[src.letter()]
	}
	return string(b)
}

// concat is the JavaScript a.concat(b) reducer: a new slice, so earlier
// states keep their values.
func concat[T any](a, b []T) []T {
	return append(slices.Clip(a), b...)
}
