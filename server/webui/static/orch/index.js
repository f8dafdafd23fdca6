// Placeholder for the orchestrator views' entry module, which registers
// them into the shell (interrupts.js, app.js). Owned by the orchestrator
// views' author, who replaces this file.
export {};
