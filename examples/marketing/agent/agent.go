package agent

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/weftlabs/weft/agent/orchestrator"
	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/examples/marketing/service"
	"github.com/weftlabs/weft/llm"
)

// ConfigYAML is the agent's default configuration (marketing.yaml).
//
//go:embed marketing.yaml
var ConfigYAML []byte

// DefaultConfig parses the embedded marketing.yaml.
func DefaultConfig() (orchestrator.Config, error) {
	c, err := orchestrator.ParseConfig(ConfigYAML)
	if err != nil {
		return orchestrator.Config{}, fmt.Errorf("marketing.yaml: %w", err)
	}
	return c, nil
}

// Options configure the agent.
type Options struct {
	// Config replaces the embedded marketing.yaml.
	Config *orchestrator.Config
	// Models are the layers' models; Models.Default is the model passed
	// to New when nil.
	Models orchestrator.Models
	// Checkpointer saves threads; the approval points need one.
	Checkpointer *checkpoint.Saver
	// Mode is react.NativeTools or react.JSONFormat (models without tool
	// calling).
	Mode react.Mode
	// ResultsDir, when set, replaces the configuration's results
	// directory.
	ResultsDir string
	// Memory, Retriever and Pauser are the orchestrator's hooks.
	Memory    orchestrator.Memory
	Retriever orchestrator.ToolRetriever
	Pauser    orchestrator.Pauser
	// DefaultUser is the memory's user for a task that names none
	// (orchestrator.Options.DefaultUser).
	DefaultUser string
}

// New builds the marketing agent over model and svc.
func New(ctx context.Context, model llm.ChatModel, svc *service.Service, opts Options) (*orchestrator.Agent, error) {
	cfg := opts.Config
	if cfg == nil {
		c, err := DefaultConfig()
		if err != nil {
			return nil, err
		}
		cfg = &c
	}
	if opts.ResultsDir != "" {
		c := *cfg
		c.Results.Dir = opts.ResultsDir
		cfg = &c
	}
	execs, err := Executors(ctx, svc)
	if err != nil {
		return nil, fmt.Errorf("marketing: tools: %w", err)
	}
	models := opts.Models
	if models.Default == nil {
		models.Default = model
	}
	return orchestrator.New(orchestrator.Options{
		Config:       cfg,
		Models:       models,
		Executors:    execs,
		Checkpointer: opts.Checkpointer,
		Mode:         opts.Mode,
		Memory:       opts.Memory,
		Retriever:    opts.Retriever,
		Pauser:       opts.Pauser,
		DefaultUser:  opts.DefaultUser,
	})
}
