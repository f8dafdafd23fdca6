// Package llm holds weft's chat messages and the ChatModel interface that
// every model provider implements.
//
// A [Message] is one concrete value type for every kind of message (system,
// human, AI, tool, and the removal marker), and its JSON form is the one
// LangChain and the LangGraph Server API use, so front ends built for
// LangGraph read weft's threads unchanged. A streamed reply arrives as
// [Chunk]s; [Merge] and [Collect] assemble them into the exact message a
// non-streaming call returns.
//
// Providers live in subpackages: llm/openai (OpenAI and every server that
// speaks its Chat Completions API: Azure, Ollama, vLLM, LM Studio),
// llm/anthropic, and llm/scripted (a model that replays a script, for tests
// and offline demos). llm/providers wires them into a [Registry] so a model
// can be named by a string such as "openai:gpt-4o-mini".
//
// This package knows nothing of graphs; Message satisfies the graph
// package's message constraint through its MessageID, WithMessageID and
// RemovesMessage methods.
package llm
