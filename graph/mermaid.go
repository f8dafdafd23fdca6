package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MermaidOptions configures Mermaid.
type MermaidOptions struct {
	// XRay draws each subgraph node as a box holding the subgraph's own
	// nodes and edges (named "sub:inner"), recursively, instead of as one
	// node. Edges into the subgraph node then lead to the nodes its START
	// leads to, and edges out of it leave from the nodes that lead to its
	// END.
	XRay bool
}

// Mermaid returns the graph as a Mermaid flowchart, in the style of
// LangGraph's draw_mermaid: solid arrows for edges and joins, dotted arrows
// for conditional edges (labelled with the path-map key when it differs
// from the node it maps to) and for the Goto targets a node lists in
// NodeOptions.Destinations. A conditional edge without a path map is drawn
// to every other node and END, since its router may pick any of them. The
// output is the same for the same graph, whatever the order of its maps.
// opts may be nil for the defaults.
func (g *Graph) Mermaid(opts *MermaidOptions) string {
	o := deref(opts)
	var items []mmItem
	var edges []mmEdge
	if g != nil && g.spec != nil {
		depth := 0
		if o.XRay {
			depth = -1
		}
		items, edges = mmFlatten(g.spec, "", depth)
	}
	d := &mmDrawing{ids: map[string]string{}, used: map[string]bool{}, rank: map[string]int{}}
	// START and END keep LangGraph's ids; everything else is allocated
	// around them in drawing order, so ids are stable for a given graph.
	d.ids[START], d.used[START], d.rank[START] = START, true, -1
	d.ids[END], d.used[END] = END, true
	d.allocate(items)
	d.rank[END] = len(d.rank) + 1

	var sb strings.Builder
	sb.WriteString("---\n")
	if g != nil && g.name != "" && g.name != "LangGraph" {
		// A YAML double-quoted scalar accepts Go's quoting of printable text.
		fmt.Fprintf(&sb, "title: %s\n", strconv.Quote(g.name))
	}
	sb.WriteString("config:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n")
	fmt.Fprintf(&sb, "\t%s([<p>%s</p>]):::first\n", START, START)
	d.writeItems(&sb, items, 1)
	edges = mmDedupe(edges)
	slices.SortStableFunc(edges, func(a, b mmEdge) int {
		if c := d.rank[a.from] - d.rank[b.from]; c != 0 {
			return c
		}
		if c := d.rank[a.to] - d.rank[b.to]; c != 0 {
			return c
		}
		if c := strings.Compare(a.label, b.label); c != 0 {
			return c
		}
		return mmBool(a.dotted) - mmBool(b.dotted)
	})
	if slices.ContainsFunc(edges, func(e mmEdge) bool { return e.to == END }) {
		fmt.Fprintf(&sb, "\t%s([<p>%s</p>]):::last\n", END, END)
	}
	for _, e := range edges {
		from, to := d.ids[e.from], d.ids[e.to]
		switch {
		case e.label != "" && e.dotted:
			fmt.Fprintf(&sb, "\t%s -. &nbsp;%s&nbsp; .-> %s;\n", from, mmEdgeLabel(e.label), to)
		case e.label != "":
			fmt.Fprintf(&sb, "\t%s -- &nbsp;%s&nbsp; --> %s;\n", from, mmEdgeLabel(e.label), to)
		case e.dotted:
			fmt.Fprintf(&sb, "\t%s -.-> %s;\n", from, to)
		default:
			fmt.Fprintf(&sb, "\t%s --> %s;\n", from, to)
		}
	}
	sb.WriteString("\tclassDef default fill:#f2f0ff,line-height:1.2\n")
	sb.WriteString("\tclassDef first fill-opacity:0\n")
	sb.WriteString("\tclassDef last fill:#bfb6fc\n")
	return sb.String()
}

// mmItem is a node of the drawing, or (with sub set) a subgraph's box.
type mmItem struct {
	path  string // the node's full name: "sub:inner" inside a subgraph
	label string // the node's own name, as shown
	sub   []mmItem
	box   bool
}

// mmEdge is an arrow between two full node names. Within one level of
// mmFlatten, the bare names START and END stand for that level's START and
// END (a real node's full name is never one of them).
type mmEdge struct {
	from, to string
	label    string
	dotted   bool
}

// mmFlatten lists a graph's nodes and edges, with node names prefixed by
// prefix; subgraph nodes are replaced by their own contents down to depth
// levels (-1: all, 0: none).
func mmFlatten(b *Builder, prefix string, depth int) ([]mmItem, []mmEdge) {
	full := func(n string) string {
		if n == START || n == END {
			return n
		}
		return prefix + n
	}
	var edges []mmEdge
	add := func(from, to, label string, dotted bool) {
		edges = append(edges, mmEdge{full(from), full(to), label, dotted})
	}
	for _, e := range b.edges {
		add(e[0], e[1], "", false)
	}
	for _, j := range b.joins {
		for _, f := range j.from {
			add(f, j.to, "", false)
		}
	}
	for _, br := range b.branches {
		if br.pathMap == nil {
			// The router may name any node, or END.
			for _, n := range b.order {
				if n != br.from {
					add(br.from, n, "", true)
				}
			}
			add(br.from, END, "", true)
			continue
		}
		for _, k := range sortedKeys(br.pathMap) {
			to, label := br.pathMap[k], ""
			if k != to {
				label = k
			}
			add(br.from, to, label, true)
		}
	}
	for _, n := range b.order {
		for _, d := range b.nodes[n].opts.Destinations {
			add(n, d, "", true)
		}
	}

	items := make([]mmItem, 0, len(b.order))
	for _, n := range b.order {
		spec := b.nodes[n]
		if depth == 0 || spec.sub == nil || spec.sub.spec == nil {
			items = append(items, mmItem{path: full(n), label: n})
			continue
		}
		inner, innerEdges := mmFlatten(spec.sub.spec, full(n)+":", depth-1)
		items = append(items, mmItem{path: full(n), label: n, sub: inner, box: true})
		edges = mmSubstitute(edges, full(n), inner, innerEdges)
	}
	return items, edges
}

// mmSubstitute replaces node s in edges with the subgraph drawn inside it:
// an edge into s leads to each node s's START leads to, and an edge out of
// s leaves from each node that leads to s's END. A subgraph without edges
// to its END ends where its nodes have no way out.
func mmSubstitute(edges []mmEdge, s string, items []mmItem, inner []mmEdge) []mmEdge {
	var in, out, loops, rest []mmEdge
	for _, e := range edges {
		switch {
		case e.from == s && e.to == s:
			loops = append(loops, e)
		case e.to == s:
			in = append(in, e)
		case e.from == s:
			out = append(out, e)
		default:
			rest = append(rest, e)
		}
	}
	var entries, exits, through []mmEdge
	for _, e := range inner {
		switch {
		case e.from == START && e.to == END:
			through = append(through, e)
		case e.from == START:
			entries = append(entries, e)
		case e.to == END:
			exits = append(exits, e)
		default:
			rest = append(rest, e)
		}
	}
	if len(exits) == 0 {
		for _, leaf := range mmLeaves(items) {
			if !slices.ContainsFunc(inner, func(e mmEdge) bool { return e.from == leaf }) {
				exits = append(exits, mmEdge{from: leaf, to: END})
			}
		}
	}
	for _, e := range in {
		for _, en := range entries {
			rest = append(rest, mmEdge{e.from, en.to, mmPick(e.label, en.label), e.dotted || en.dotted})
		}
		for _, t := range through {
			for _, o := range out {
				// START leads straight to END: the subgraph may be passed
				// through without running any of its nodes.
				rest = append(rest, mmEdge{e.from, o.to, mmPick(e.label, mmPick(o.label, t.label)), e.dotted || t.dotted || o.dotted})
			}
		}
	}
	for _, x := range exits {
		for _, o := range out {
			rest = append(rest, mmEdge{x.from, o.to, mmPick(o.label, x.label), x.dotted || o.dotted})
		}
		for _, l := range loops {
			for _, en := range entries {
				rest = append(rest, mmEdge{x.from, en.to, mmPick(l.label, en.label), x.dotted || l.dotted || en.dotted})
			}
		}
	}
	return rest
}

// mmPick returns the outer label, or the inner one when there is none.
func mmPick(outer, inner string) string {
	if outer != "" {
		return outer
	}
	return inner
}

// mmLeaves lists the full names of the nodes drawn in items, boxes opened.
func mmLeaves(items []mmItem) []string {
	var out []string
	for _, it := range items {
		if it.box {
			out = append(out, mmLeaves(it.sub)...)
		} else {
			out = append(out, it.path)
		}
	}
	return out
}

func mmDedupe(edges []mmEdge) []mmEdge {
	seen := make(map[mmEdge]bool, len(edges))
	out := edges[:0]
	for _, e := range edges {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

func mmBool(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mmDrawing allocates Mermaid ids and the order edges are listed in.
type mmDrawing struct {
	ids  map[string]string // full name -> Mermaid id
	used map[string]bool
	rank map[string]int
}

func (d *mmDrawing) allocate(items []mmItem) {
	for _, it := range items {
		id := mmID(it.path)
		for i := 2; d.used[id]; i++ {
			id = mmID(it.path) + "_" + strconv.Itoa(i)
		}
		d.ids[it.path], d.used[id] = id, true
		d.rank[it.path] = len(d.rank)
		if it.box {
			d.allocate(it.sub)
		}
	}
}

func (d *mmDrawing) writeItems(sb *strings.Builder, items []mmItem, depth int) {
	indent := strings.Repeat("\t", depth)
	for _, it := range items {
		id := d.ids[it.path]
		if it.box {
			switch {
			case id == it.label:
				fmt.Fprintf(sb, "%ssubgraph %s\n", indent, id)
			case mmPlain(it.label):
				fmt.Fprintf(sb, "%ssubgraph %s[%s]\n", indent, id, it.label)
			default:
				fmt.Fprintf(sb, "%ssubgraph %s[\"%s\"]\n", indent, id, mmText(it.label))
			}
			d.writeItems(sb, it.sub, depth+1)
			fmt.Fprintf(sb, "%send\n", indent)
			continue
		}
		if mmPlain(it.label) {
			fmt.Fprintf(sb, "%s%s(%s)\n", indent, id, it.label)
		} else {
			fmt.Fprintf(sb, "%s%s(\"%s\")\n", indent, id, mmText(it.label))
		}
	}
}

// mmPlain reports whether a label can stand unquoted: letters, digits
// and '_' only, and no keyword.
func mmPlain(s string) bool {
	if mmKeywords[strings.ToLower(s)] {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// mmKeywords are words Mermaid's flowchart grammar reads as keywords, so
// they cannot be node ids as they are.
var mmKeywords = map[string]bool{
	"end": true, "graph": true, "flowchart": true, "flowchart-elk": true, "subgraph": true,
	"style": true, "linkstyle": true, "classdef": true, "class": true, "click": true,
	"call": true, "href": true, "callback": true, "direction": true, "default": true,
	"interpolate": true, "accdescr": true, "acctitle": true,
}

// mmID turns a node's full name into a Mermaid id: letters, digits and '_'
// stay, any other character becomes _xHEX_ (so "my-node" is my_x2d_node
// and "sub:inner" is sub_x3a_inner), and keywords get a trailing '_'.
func mmID(name string) string {
	var sb strings.Builder
	for _, r := range name {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			sb.WriteRune(r)
		case r == utf8.RuneError:
			sb.WriteString("_xfffd_")
		default:
			fmt.Fprintf(&sb, "_x%x_", r)
		}
	}
	id := sb.String()
	if id == "" || mmKeywords[strings.ToLower(id)] {
		id += "_"
	}
	return id
}

// mmText escapes a name for a quoted Mermaid label, where '"' ends the
// label, '#' starts an entity code and '<', '>' and '&' would be read as
// HTML.
func mmText(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch r {
		case '"', '#', '<', '>', '&':
			fmt.Fprintf(&sb, "#%d;", r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// mmEdgeLabel escapes a path-map key for an unquoted edge label, where
// punctuation could be read as part of the arrow: anything but letters,
// digits, '_' and spaces becomes an entity code.
func mmEdgeLabel(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r == '_' || r == ' ' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r >= utf8.RuneSelf:
			sb.WriteRune(r)
		default:
			fmt.Fprintf(&sb, "#%d;", r)
		}
	}
	return sb.String()
}
