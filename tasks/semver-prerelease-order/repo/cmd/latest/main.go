// Command latest prints the highest semantic version among the tags read
// from stdin, one per line.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/mkowalski/relver"
)

func main() {
	pre := flag.Bool("pre", false, "consider pre-releases")
	flag.Parse()
	var tags []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			tags = append(tags, t)
		}
	}
	latest := relver.Latest(tags, *pre)
	if latest == "" {
		fmt.Fprintln(os.Stderr, "latest: no version tags")
		os.Exit(1)
	}
	fmt.Println(latest)
}
