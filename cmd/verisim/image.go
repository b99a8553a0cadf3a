package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/image"
)

func (a *app) imageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Build and list root filesystem images",
		Example: `  verisim image build bookworm-dev --packages git,python3
  verisim image ls`,
	}
	c.AddCommand(a.imageBuildCmd(), a.imageLsCmd())
	return c
}

func (a *app) store() *image.Store {
	return image.NewStore(filepath.Join(a.cfg.StateDir, "images"))
}

func (a *app) imageBuildCmd() *cobra.Command {
	var packages, suite string
	c := &cobra.Command{
		Use:   "build NAME",
		Short: "Build a Debian root filesystem with debootstrap",
		Long: `Builds a minimal Debian root filesystem with debootstrap from the mirror in
this machine's apt sources, plus --packages, and stores it under NAME for
--image NAME. Needs root and debootstrap (scripts/install-deps.sh installs it).`,
		Example: `  verisim image build bookworm-dev --packages git,python3,build-essential
  verisim sandbox run --image bookworm-dev -- python3 --version`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var pkgs []string
			for _, p := range strings.Split(packages, ",") {
				if p = strings.TrimSpace(p); p != "" {
					pkgs = append(pkgs, p)
				}
			}
			start := time.Now()
			img, err := a.store().Build(cmd.Context(), args[0], image.BuildOptions{Suite: suite, Packages: pkgs, Log: os.Stderr})
			if err != nil {
				return withCode(exitImage, err)
			}
			fmt.Fprintf(os.Stderr, "built %s in %s\n", img.Ref, time.Since(start).Round(time.Second))
			return nil
		},
	}
	c.Flags().StringVar(&packages, "packages", "", "comma-separated Debian packages to add")
	c.Flags().StringVar(&suite, "suite", "bookworm", "Debian release")
	return c
}

func (a *app) imageLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List built and cached images",
		Example: "  verisim image ls",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := a.store().List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tREF\tSIZE\tCREATED")
			for _, i := range list {
				fmt.Fprintf(tw, "%s\t%s\t%.1f MB\t%s\n", i.Kind, i.Ref, float64(i.Size)/(1<<20), i.Created.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
}
