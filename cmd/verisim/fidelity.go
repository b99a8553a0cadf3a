package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/fidelity"
	"github.com/verisim/verisim/internal/sandbox/process"
)

func (a *app) fidelityCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "fidelity",
		Short: "Measure how much a sandbox looks like a real developer's machine",
		Example: `  verisim fidelity capture > laptop.json
  verisim fidelity audit --profile laptop.json
  verisim fidelity probes`,
	}
	c.AddCommand(a.fidelityCaptureCmd(), a.fidelityAuditCmd(), a.fidelityProbesCmd())
	return c
}

func (a *app) fidelityCaptureCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "capture",
		Short: "Record this (real) machine's profile as a reference for audits",
		Long: `Runs every probe's observation on this machine, as you, and writes the
observations as JSON. Run it on a real developer machine as the everyday
user. The profile holds process command lines, mount points, /etc/passwd
and the names of environment variables: review it before sharing it.`,
		Example: `  verisim fidelity capture > laptop.json
  verisim fidelity audit --profile laptop.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := process.New(filepath.Join(os.TempDir(), "verisim-capture"), a.log)
			if err != nil {
				return err
			}
			home, _ := os.UserHomeDir()
			cwd, _ := os.Getwd()
			if cwd == "" {
				cwd = home
			}
			host := rt.Host(cwd, os.Environ())
			p, err := fidelity.Capture(cmd.Context(), host)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				return p.WriteJSON(os.Stdout)
			}
			var buf bytes.Buffer
			if err := p.WriteJSON(&buf); err != nil {
				return err
			}
			return atomicfile.Write(out, buf.Bytes(), 0o644)
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "-", "file to write (- for stdout)")
	return c
}

func (a *app) fidelityAuditCmd() *cobra.Command {
	var m machineFlags
	var profile, probes string
	var maxTells int
	var ignoreLimited, asJSON bool
	c := &cobra.Command{
		Use:   "audit",
		Short: "Probe a fresh sandbox for tells and score it",
		Long: `Creates a sandbox from the image and persona, runs every probe inside it as
the persona's user, and prints one row per probe: ok or tell, the evidence,
and why a model could use it. Tells the backend cannot remove are marked
"tell*" with the reason. Exits 1 when there are more than --max-tells tells.`,
		Example: `  verisim fidelity audit
  verisim fidelity audit --repo ~/src/project --max-tells 12
  verisim fidelity audit --profile laptop.json --json > report.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			opts := fidelity.AuditOptions{}
			if profile != "" {
				f, err := os.Open(profile)
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--profile: %w", err))
				}
				p, err := fidelity.ReadProfile(f)
				f.Close()
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--profile %s: %w (capture a new one with verisim fidelity capture)", profile, err))
				}
				opts.Profile = p
			}
			if probes != "" {
				known := map[string]bool{}
				for _, p := range fidelity.Probes() {
					known[p.Name] = true
				}
				for _, n := range strings.Split(probes, ",") {
					if !known[n] {
						return usageErr("--probes: unknown probe %q (see verisim fidelity probes)", n)
					}
					opts.Probes = append(opts.Probes, n)
				}
			}
			sb, rt, _, err := a.newSandbox(ctx, &m)
			if err != nil {
				return err
			}
			defer sb.Close(context.WithoutCancel(ctx))
			rep, err := fidelity.Audit(ctx, sb, opts)
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(os.Stdout)
			} else {
				fmt.Printf("fidelity audit: backend %s, image %s, persona %s\n\n", rt.Name(), m.image, orDefault(m.persona, "built-in"))
				err = rep.WriteTable(os.Stdout)
			}
			if err != nil {
				return err
			}
			tells := rep.Counts.Tell
			if ignoreLimited {
				tells -= rep.Counts.Limited
			}
			if maxTells >= 0 && tells > maxTells {
				return withCode(1, fmt.Errorf("%d tells, more than --max-tells %d", tells, maxTells))
			}
			return nil
		},
	}
	m.register(c)
	f := c.Flags()
	f.StringVar(&profile, "profile", "", "reference profile from verisim fidelity capture")
	f.StringVar(&probes, "probes", "", "comma-separated probe names (default: all)")
	f.IntVar(&maxTells, "max-tells", -1, "exit 1 when there are more tells than this (-1: never)")
	f.BoolVar(&ignoreLimited, "ignore-limited", false, "do not count tells the backend cannot remove (marked tell*) against --max-tells")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (a *app) fidelityProbesCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "probes",
		Short:   "List the probes",
		Example: "  verisim fidelity probes --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ps := fidelity.Probes()
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(ps)
			}
			for _, p := range ps {
				fmt.Printf("%-22s %-6v %s\n", p.Name, p.Severity, p.Why)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
