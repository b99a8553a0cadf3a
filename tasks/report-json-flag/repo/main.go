// Command tally reports time spent per project from a plain-text log.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/ana-lima/tally/timelog"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: tally report|projects [flags] FILE")
		return 2
	}
	switch args[0] {
	case "report":
		return report(args[1:], stdout, stderr)
	case "projects":
		return projects(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "tally: unknown command %q\n", args[0])
	return 2
}

func load(path string) ([]timelog.Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return timelog.Parse(f)
}

func report(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	since := fs.String("since", "", "only count entries on or after `DATE` (YYYY-MM-DD)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: tally report [-since DATE] FILE")
		return 2
	}
	entries, err := load(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "tally:", err)
		return 1
	}
	if *since != "" {
		from, err := time.Parse("2006-01-02", *since)
		if err != nil {
			fmt.Fprintf(stderr, "tally: bad -since %q\n", *since)
			return 2
		}
		kept := entries[:0]
		for _, e := range entries {
			if !e.Date.Before(from) {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	totals := timelog.Totals(entries)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tTIME")
	sum := 0
	for _, t := range totals {
		fmt.Fprintf(tw, "%s\t%s\n", t.Project, hm(t.Minutes))
		sum += t.Minutes
	}
	fmt.Fprintf(tw, "TOTAL\t%s\n", hm(sum))
	tw.Flush()
	return 0
}

func projects(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: tally projects FILE")
		return 2
	}
	entries, err := load(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "tally:", err)
		return 1
	}
	seen := map[string]bool{}
	var names []string
	for _, e := range entries {
		if !seen[e.Project] {
			seen[e.Project] = true
			names = append(names, e.Project)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintln(stdout, n)
	}
	return 0
}

func hm(minutes int) string {
	return fmt.Sprintf("%dh%02dm", minutes/60, minutes%60)
}
