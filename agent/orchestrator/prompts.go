package orchestrator

// defaultPrompts are the prompts of Config.Prompts left empty. They are
// in English; a configuration in another language replaces them (the
// marketing example's are Korean).
func defaultPrompts() Prompts {
	return Prompts{
		Cognitive: "You read a user's request to an agent that plans and runs tasks with tools. " +
			"Classify its intent in three levels (domain, category, subcategory), list the entities it names, " +
			"and say whether it is ambiguous: ambiguous only when a plan would have to guess something the user " +
			"must decide (which product, which period), not merely because details are missing that have sensible defaults. " +
			"When ambiguous, write the one question to ask. Say whether the request needs tools at all.",
		Planning: "You plan a task as a list of todos for executors that run tools. " +
			"Each todo has a short id (t1, t2, ...), a title saying what it does, the executor that runs it, " +
			"one of that executor's tools, the tool's parameters (matching its schema exactly), " +
			"and the ids of the todos it needs the results of (depends_on). " +
			"Todos that do not need each other must not depend on each other, so that they can run at the same time. " +
			"Use only the executors and tools listed. Keep the plan short: only the todos the request needs.",
		Preparation: "Propose the parameters of the tool for this step, as a JSON object matching the tool's schema, " +
			"using what the step and the results of the steps before it say.",
		Execution: "You carry out one step of a plan with the tools given. Call the tools the step needs, " +
			"then answer with what they returned, briefly.",
		Response: "Answer the user's request from the results of the steps that succeeded, and only from them. " +
			"Do not invent figures. If some steps failed or were skipped, say what is missing. " +
			"Write in the language of the request.",
		Chat:               "You are a helpful assistant. Answer briefly, in the language of the user.",
		NextActions:        "Suggest up to three next actions the user could ask for, each a short request in the language of the request.",
		Rejected:           "The plan was rejected, so nothing was run.%s",
		NothingDone:        "None of the plan's steps succeeded, so there is no result to report.",
		ClarificationAdded: "\n\nAdditional information: %s",
		DefaultQuestion:    "Could you say more precisely what you want?",
	}
}

// withDefaults fills the empty prompts from the defaults.
func (p Prompts) withDefaults() Prompts {
	d := defaultPrompts()
	fill := func(s *string, def string) {
		if *s == "" {
			*s = def
		}
	}
	fill(&p.Cognitive, d.Cognitive)
	fill(&p.Planning, d.Planning)
	fill(&p.Preparation, d.Preparation)
	fill(&p.Execution, d.Execution)
	fill(&p.Response, d.Response)
	fill(&p.Chat, d.Chat)
	fill(&p.NextActions, d.NextActions)
	fill(&p.Rejected, d.Rejected)
	fill(&p.NothingDone, d.NothingDone)
	fill(&p.ClarificationAdded, d.ClarificationAdded)
	fill(&p.DefaultQuestion, d.DefaultQuestion)
	return p
}
