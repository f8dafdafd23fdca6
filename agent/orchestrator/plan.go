package orchestrator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Strategy is how a plan's todos run (document 003's ExecutionStrategy).
type Strategy string

// The strategies the orchestrator decides among. SWARM and CYCLIC of
// document 003 are not implemented (docs/orchestrator.md says why).
const (
	// StrategySingle: one todo.
	StrategySingle Strategy = "single"
	// StrategySequential: every todo waits for the one before it.
	StrategySequential Strategy = "sequential"
	// StrategyParallel: some todos can run at the same time; every ready
	// todo is dispatched at once with Send.
	StrategyParallel Strategy = "parallel"
)

// Plan is a task's plan: its todos as planned (or as a person edited
// them), their order, the strategy, an estimate and a drawing.
type Plan struct {
	// Task is the thread's task the plan is for, from 1.
	Task    int    `json:"task"`
	Request string `json:"request"`
	// Summary is the planner's one-line description of the plan.
	Summary string `json:"summary,omitempty"`
	Todos   []Todo `json:"todos"`
	// Order is a topological order of the todos' ids: every todo after
	// the todos it depends on, ties in plan order.
	Order []string `json:"order"`
	// Levels groups the ids by depth: a todo's level is one more than
	// the deepest of its dependencies, so the todos of a level can run
	// at the same time.
	Levels   [][]string `json:"levels"`
	Strategy Strategy   `json:"strategy"`
	Estimate Estimate   `json:"estimate"`
	// Mermaid draws the todos and their dependencies as a flowchart.
	Mermaid string `json:"mermaid"`
	// Revision counts the plan's versions: 1 as planned, +1 per edit.
	Revision int  `json:"revision"`
	Edited   bool `json:"edited,omitempty"`
}

// Estimate is a plan's expected cost and time, from the per-tool figures
// of the configuration (ToolConfig.Seconds, ToolConfig.Cost).
type Estimate struct {
	// Seconds is the sum over all todos: the time one after another.
	Seconds float64 `json:"seconds"`
	// CriticalSeconds is the longest dependency chain's time: the time
	// with every ready todo run at once.
	CriticalSeconds float64 `json:"critical_seconds"`
	// CriticalPath is that chain's todo ids.
	CriticalPath []string `json:"critical_path"`
	// Cost is the sum of the todos' costs, in the configuration's unit.
	Cost float64 `json:"cost"`
}

// Errors of plan validation; a *PlanError or *CycleError matches them.
var (
	// ErrInvalidPlan: a plan breaks a rule (an unknown tool or
	// dependency, a duplicate id, parameters its tool refuses, a cycle).
	ErrInvalidPlan = errors.New("orchestrator: invalid plan")
	// ErrCycle: the todos' dependencies form a cycle.
	ErrCycle = errors.New("orchestrator: dependency cycle")
)

// PlanError lists everything wrong with a plan.
type PlanError struct {
	Problems []string
}

func (e *PlanError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid plan: " + e.Problems[0]
	}
	return fmt.Sprintf("invalid plan, %d problems: %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// Is matches ErrInvalidPlan.
func (e *PlanError) Is(target error) bool { return target == ErrInvalidPlan }

// CycleError is a dependency cycle; Cycle lists its todo ids, the first
// repeated at the end ("t1 → t3 → t1").
type CycleError struct {
	Cycle []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Cycle, " → ")
}

// Is matches ErrCycle and ErrInvalidPlan.
func (e *CycleError) Is(target error) bool { return target == ErrCycle || target == ErrInvalidPlan }

// Order sorts todos topologically. It returns every id after the ids it
// depends on (ties in the todos' order), and the ids grouped by level.
// Dependencies on ids not among todos are ignored here (Validate reports
// them). A cycle fails with a *CycleError naming it.
func Order(todos []Todo) (order []string, levels [][]string, err error) {
	index := make(map[string]int, len(todos))
	for i, t := range todos {
		index[t.ID] = i
	}
	if c := findCycle(todos, index); c != nil {
		return nil, nil, &CycleError{Cycle: c}
	}
	level := make([]int, len(todos))
	done := make([]bool, len(todos))
	// Kahn's algorithm in rounds: each round takes every todo whose
	// dependencies were all taken, in plan order.
	for len(order) < len(todos) {
		var round []int
		for i, t := range todos {
			if done[i] {
				continue
			}
			ready, lv := true, 0
			for _, d := range t.DependsOn {
				j, ok := index[d]
				if !ok {
					continue
				}
				if !done[j] {
					ready = false
					break
				}
				lv = max(lv, level[j]+1)
			}
			if ready {
				round = append(round, i)
				level[i] = lv
			}
		}
		for _, i := range round {
			done[i] = true
			order = append(order, todos[i].ID)
		}
	}
	for _, id := range order {
		lv := level[index[id]]
		for len(levels) <= lv {
			levels = append(levels, nil)
		}
		levels[lv] = append(levels[lv], id)
	}
	return order, levels, nil
}

// findCycle returns a dependency cycle (ids, the first repeated last), or
// nil. The search starts from the todos in order, so the same plan names
// the same cycle.
func findCycle(todos []Todo, index map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(todos))
	var stack []int
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, d := range todos[i].DependsOn {
			j, ok := index[d]
			if !ok {
				continue
			}
			switch color[j] {
			case grey:
				start := slices.Index(stack, j)
				for _, k := range stack[start:] {
					cycle = append(cycle, todos[k].ID)
				}
				// Drawn in the direction work flows (a dependency
				// before the todo that needs it), from the todo that
				// comes first in the plan.
				slices.Reverse(cycle)
				first := 0
				for k, id := range cycle {
					if index[id] < index[cycle[first]] {
						first = k
					}
				}
				cycle = slices.Concat(cycle[first:], cycle[:first])
				cycle = append(cycle, cycle[0])
				return true
			case white:
				if visit(j) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range todos {
		if color[i] == white && visit(i) {
			return cycle
		}
	}
	return nil
}

// DecideStrategy is document 003's strategy decider: SINGLE for one todo,
// PARALLEL when some level holds two todos or more, SEQUENTIAL otherwise.
func DecideStrategy(levels [][]string) Strategy {
	n := 0
	wide := false
	for _, l := range levels {
		n += len(l)
		wide = wide || len(l) > 1
	}
	switch {
	case n == 1:
		return StrategySingle
	case wide:
		return StrategyParallel
	}
	return StrategySequential
}

// estimate adds up the todos' figures; cost gives a todo's seconds and
// cost. order must be a topological order of todos.
func estimate(todos []Todo, order []string, cost func(Todo) (seconds, money float64)) Estimate {
	byID := make(map[string]Todo, len(todos))
	for _, t := range todos {
		byID[t.ID] = t
	}
	var e Estimate
	finish := make(map[string]float64, len(todos))
	prev := make(map[string]string, len(todos))
	last := ""
	for _, id := range order {
		t := byID[id]
		s, c := cost(t)
		e.Seconds += s
		e.Cost += c
		start := 0.0
		for _, d := range t.DependsOn {
			if f, ok := finish[d]; ok && f > start {
				start, prev[id] = f, d
			}
		}
		finish[id] = start + s
		if last == "" || finish[id] > finish[last] {
			last = id
		}
	}
	if last != "" {
		e.CriticalSeconds = finish[last]
		for id := last; id != ""; id = prev[id] {
			e.CriticalPath = append(e.CriticalPath, id)
		}
		slices.Reverse(e.CriticalPath)
	}
	return e
}

// Mermaid draws todos as a Mermaid flowchart: one box per todo with its
// title, executor and tool, an arrow from each dependency to the todo
// that needs it, and a class per status.
func Mermaid(todos []Todo) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, t := range todos {
		label := t.ID + ": " + t.Title
		sub := t.Executor
		if t.Tool != "" {
			sub += " · " + t.Tool
		}
		fmt.Fprintf(&b, "  %s[\"%s<br/><small>%s</small>\"]:::%s\n", mermaidID(t.ID), mermaidText(label), mermaidText(sub), t.Status)
	}
	for _, t := range todos {
		for _, d := range t.DependsOn {
			fmt.Fprintf(&b, "  %s --> %s\n", mermaidID(d), mermaidID(t.ID))
		}
	}
	b.WriteString("  classDef pending fill:#f5f5f5,stroke:#999\n")
	b.WriteString("  classDef running fill:#e3f2fd,stroke:#1e88e5\n")
	b.WriteString("  classDef done fill:#e8f5e9,stroke:#43a047\n")
	b.WriteString("  classDef failed fill:#ffebee,stroke:#e53935\n")
	b.WriteString("  classDef skipped fill:#fff8e1,stroke:#f9a825\n")
	return b.String()
}

// mermaidID makes a todo id safe as a Mermaid node id.
func mermaidID(id string) string {
	var b strings.Builder
	b.WriteString("todo_")
	for _, r := range id {
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "_%x_", r)
		}
	}
	return b.String()
}

// mermaidText escapes text for a quoted Mermaid label.
func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ")
	return r.Replace(s)
}
