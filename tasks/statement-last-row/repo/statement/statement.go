// Package statement reads bank statement exports.
package statement

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Txn is one booked transaction.
type Txn struct {
	Date        time.Time
	Description string
	Cents       int64
}

// Read parses a statement: a header line, then one transaction per line as
// date;description;amount. Blank lines and lines starting with '#' are
// skipped.
func Read(r io.Reader) ([]Txn, error) {
	br := bufio.NewReader(r)
	var txns []Txn
	lineNo := 0
	header := true
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		lineNo++
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if header {
			header = false
			continue
		}
		t, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		txns = append(txns, t)
	}
	return txns, nil
}

func parseLine(line string) (Txn, error) {
	fields := strings.Split(line, ";")
	if len(fields) != 3 {
		return Txn{}, fmt.Errorf("want 3 fields, got %d", len(fields))
	}
	date, err := time.Parse("02.01.2006", strings.TrimSpace(fields[0]))
	if err != nil {
		return Txn{}, fmt.Errorf("bad date %q", fields[0])
	}
	cents, err := ParseAmount(fields[2])
	if err != nil {
		return Txn{}, err
	}
	return Txn{Date: date, Description: strings.TrimSpace(fields[1]), Cents: cents}, nil
}

// ParseAmount parses "1.234,56" or "-23,45" into cents.
func ParseAmount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	clean := strings.ReplaceAll(s, ".", "")
	whole, frac, hasFrac := strings.Cut(clean, ",")
	neg := strings.HasPrefix(whole, "-")
	whole = strings.TrimPrefix(whole, "-")
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseUint(whole, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("bad amount %q", s)
	}
	var f int64
	if hasFrac {
		if len(frac) == 1 {
			frac += "0"
		}
		if len(frac) != 2 {
			return 0, fmt.Errorf("bad amount %q", s)
		}
		f, err = strconv.ParseInt(frac, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad amount %q", s)
		}
	}
	c := int64(w)*100 + f
	if neg {
		c = -c
	}
	return c, nil
}
