// Package cli holds the weft command's commands; cmd/weft only runs them.
package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/checkpoint/dburl"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/store"
	storepg "github.com/weftlabs/weft/store/postgres"
	storesqlite "github.com/weftlabs/weft/store/sqlite"
)

// New returns the weft command. version is the release it reports; when
// empty, the module version Go recorded in the binary is used.
func New(version string) *cobra.Command {
	root := &cobra.Command{
		Use:   "weft",
		Short: "weft runs agent graphs with LangGraph's execution model, in Go",
		// Errors are printed once, by the caller, without the usage text
		// that would bury them.
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newGraphCmd(), newMCPCmd(), newMigrateCmd(), newRunCmd(), newServeCmd(version), newThreadsCmd(), newVersionCmd(version))
	return root
}

func newGraphCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Inspect graphs",
	}
	cmd.AddCommand(newDrawCmd())
	return cmd
}

func newDrawCmd() *cobra.Command {
	// No --xray: none of these graphs has a subgraph, so it would draw the
	// same chart. graph.MermaidOptions.XRay expands subgraphs in a
	// program's own graphs.
	cmd := &cobra.Command{
		Use:   "draw NAME",
		Short: "Print a graph as a Mermaid flowchart",
		Long: "Print a graph as a Mermaid flowchart, for a Markdown file or https://mermaid.live.\n\n" +
			"Graphs: " + strings.Join(examples.Names(), ", ") + ".",
		Example: "  weft graph draw approval\n  weft graph draw travel > travel.mmd",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("graph draw takes the name of one graph, got %d arguments; known graphs: %s",
					len(args), strings.Join(examples.Names(), ", "))
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return examples.Names(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := examples.Lookup(args[0])
			if err != nil {
				return err
			}
			g, err := e.Build(nil)
			if err != nil {
				return fmt.Errorf("building graph %q: %w", e.Name, err)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), g.Mermaid(nil))
			return err
		},
	}
	return cmd
}

func newMigrateCmd() *cobra.Command {
	var dsn string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or update the database schema (checkpoints and long-term store)",
		Long: "Create or update the schema of the checkpoint saver and the long-term store in one database:\n" +
			"an SQLite file (default " + dburl.DefaultPath + ") or PostgreSQL, named by --db or $" + dburl.EnvVar + ".\n" +
			"Programs also migrate on first use; this command lets a deployment do it ahead of time.\n" +
			"It is safe to run while other processes use the database.",
		Example: "  weft migrate\n  weft migrate --db postgres://weft@db:5432/weft",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			source := dbSource(cmd)
			backend, target, err := dburl.Parse(dsn)
			if err != nil {
				return fmt.Errorf("%s: %w", source, err)
			}
			// Opened without migrating: Migrate below does it, once.
			db, err := dburl.Open(ctx, dsn, dburl.Options{SkipMigrate: true, Source: source})
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Migrate(ctx); err != nil {
				return fmt.Errorf("checkpoints: %w", err)
			}
			var st *store.Store
			if backend == "postgres" {
				st, err = storepg.Open(ctx, target, store.Config{})
			} else {
				st, err = storesqlite.Open(ctx, target, store.Config{})
			}
			if err != nil {
				return fmt.Errorf("store: %w", err)
			}
			if err := st.Close(); err != nil {
				return fmt.Errorf("store: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "migrated checkpoints and store in %s %s\n", db.Backend, db.Target)
			return err
		},
	}
	addDBFlag(cmd, &dsn, "database")
	return cmd
}

func newVersionCmd(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print weft's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString(version))
			return err
		},
	}
}

// versionString is "weft VERSION (GOVERSION OS/ARCH[, commit REV])".
func versionString(version string) string {
	info, ok := debug.ReadBuildInfo()
	if version == "" {
		version = "devel"
		if ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
	}
	extra := fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = ", modified"
				}
			}
		}
		if rev != "" {
			extra += ", commit " + rev[:min(12, len(rev))] + dirty
		}
	}
	return fmt.Sprintf("weft %s (%s)", version, extra)
}
