package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
)

// The prompts are English, for the models to read; the answers follow the
// user's language.

const routerPrompt = `You route the requests of a workflow-guide assistant. Decide whether the user's latest message is
- a simple question (is_complex_task false): a greeting, or a question answered at once from the knowledge base, such as what a tool does, how one step works, or what a term means; or
- a complex task (is_complex_task true): a piece of work of several steps the user wants to carry out, such as producing a video, setting up a data pipeline, estimating a budget or automating a report, which needs a plan of sub-tasks and a recommended service or tool for each.
Give a short reason.`

const plannerPrompt = `You plan work for a workflow-guide assistant. Split the user's request into 2 to 6 sub-tasks, in the order they are done. Write each as a short phrase in the user's language naming one step (for example "대본 작성", "영상 생성"); each sub-task will get one recommended service or tool. Respect what is known about the user.`

const recommendPrompt = `You are the tool expert of a workflow-guide assistant. The user approved a plan; for each sub-task without a recommendation, find the one best service or tool:
- search the knowledge base with retrieve_docs, in the user's language (one search per sub-task; several searches may go in one reply);
- compute every figure (prices, totals, yearly costs) with calculator, and look up dates with get_time;
- read_memory finds what is remembered about the user; write_memory saves a lasting preference the user states;
- web_search, when you have it, is for facts missing from the knowledge base.
Then call save_recommendation once per sub-task with the service or tool, why it fits, and the citations of the passages it rests on. When every sub-task has a recommendation, reply with one short sentence and no tool call.`

const guidePrompt = `You write the final answer of a workflow-guide assistant: a guide the user can follow step by step. Answer in the user's language.
Use the sources below for facts about workflows and tools, and cite them inline by number, as [1]; end with a "Sources" list giving each cited number with its citation. If the sources do not cover something, say so rather than guess. Follow what is known about the user.`

// MemoryInstructions tell the reflection step's memory manager what to
// remember: document 004's preferences and feedback.
const MemoryInstructions = `Extract what is worth remembering about the user for later workflow guides:
- preferences: services or tools they like or avoid, budget limits, the language, format and level of detail of answers;
- feedback on plans: steps they removed, added or rejected, and why;
- tools they asked for that the knowledge base lacks;
- lasting facts about their work (team, role, time zone).
Do not record the request itself, or anything true only for this conversation.`

// numbered lists items as "1. ...".
func numbered(items []string) string {
	var b strings.Builder
	for i, it := range items {
		fmt.Fprintf(&b, "%d. %s\n", i+1, it)
	}
	return b.String()
}

// memorySection says what is remembered about the user, or nothing.
func memorySection(mems []memory.Memory[memory.Fact]) string {
	if len(mems) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nWhat is remembered about the user (from earlier conversations):\n")
	for _, m := range mems {
		fmt.Fprintf(&b, "- %s\n", m.Content.Text())
	}
	return b.String()
}

// planSection shows the plan, with each sub-task's recommendation when it
// has one.
func planSection(plan []string, recs map[string]Recommendation) string {
	var b strings.Builder
	for i, st := range plan {
		fmt.Fprintf(&b, "%d. %s", i+1, st)
		if r, ok := recs[st]; ok {
			fmt.Fprintf(&b, " → %s", r.Recommendation)
			if r.Reason != "" {
				fmt.Fprintf(&b, " (%s)", r.Reason)
			}
			if len(r.Sources) > 0 {
				fmt.Fprintf(&b, " [sources: %s]", strings.Join(r.Sources, "; "))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// maxSourceText bounds each source's text in the guide's prompt.
const maxSourceText = 700

// sourcesSection numbers the passages for citation.
func sourcesSection(docs []rag.Passage) string {
	if len(docs) == 0 {
		return "\n\nSources: none were found; say that the knowledge base does not cover this."
	}
	var b strings.Builder
	b.WriteString("\n\nSources:\n")
	for i, d := range docs {
		text := d.Text
		if utf8.RuneCountInString(text) > maxSourceText {
			text = string([]rune(text)[:maxSourceText]) + "…"
		}
		fmt.Fprintf(&b, "[%d] %s — %s: %s\n", i+1, d.Citation, d.Title, strings.Join(strings.Fields(text), " "))
	}
	return b.String()
}
