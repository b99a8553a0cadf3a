// Command bankcsv converts a bank statement export to CSV or summarizes it.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"os"

	"github.com/jonas-weber/bankcsv/statement"
)

func main() {
	summary := flag.Bool("summary", false, "print totals per month")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bankcsv [-summary] FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	txns, err := statement.Read(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *summary {
		for _, m := range statement.Summarize(txns) {
			fmt.Printf("%s  in %10.2f  out %10.2f\n", m.Key, float64(m.InCents)/100, float64(m.OutCents)/100)
		}
		return
	}
	w := csv.NewWriter(os.Stdout)
	w.Write([]string{"date", "description", "amount"})
	for _, t := range txns {
		w.Write([]string{t.Date.Format("2006-01-02"), t.Description, fmt.Sprintf("%.2f", float64(t.Cents)/100)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
