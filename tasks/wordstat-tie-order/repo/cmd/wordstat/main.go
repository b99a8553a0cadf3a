// Command wordstat prints word frequencies.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/jsato/wordstat/count"
)

func main() {
	top := flag.Int("top", 20, "show the `N` most frequent words (0 for all)")
	minLen := flag.Int("min-len", 1, "ignore words shorter than `N` letters")
	flag.Parse()
	c := &count.Counter{MinLen: *minLen}
	if flag.NArg() == 0 {
		if err := c.Add(os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "wordstat:", err)
			os.Exit(1)
		}
	}
	for _, path := range flag.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wordstat:", err)
			os.Exit(1)
		}
		err = c.Add(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "wordstat:", err)
			os.Exit(1)
		}
	}
	for _, w := range c.Top(*top) {
		fmt.Printf("%7d  %s\n", w.Count, w.Text)
	}
	fmt.Printf("%7d  words, %d distinct\n", c.Total(), c.Distinct())
}
