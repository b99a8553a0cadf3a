package statement

import (
	"strings"
	"testing"
)

const sample = `Buchungstag;Verwendungszweck;Betrag
# exported 2024-06-01
02.05.2024;REWE Markt;-23,45
03.05.2024;Gehalt Mai;2.450,00

15.05.2024;Miete;-890,00
`

func TestRead(t *testing.T) {
	txns, err := Read(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(txns) != 3 {
		t.Fatalf("got %d transactions, want 3", len(txns))
	}
	if txns[0].Description != "REWE Markt" || txns[0].Cents != -2345 {
		t.Errorf("first = %+v", txns[0])
	}
	if txns[1].Cents != 245000 {
		t.Errorf("salary cents = %d, want 245000", txns[1].Cents)
	}
	if got := txns[2].Date.Format("2006-01-02"); got != "2024-05-15" {
		t.Errorf("third date = %s", got)
	}
}

func TestReadBadLine(t *testing.T) {
	_, err := Read(strings.NewReader("h;h;h\n02.05.2024;oops\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want a line 2 error", err)
	}
}

func TestParseAmount(t *testing.T) {
	cases := map[string]int64{
		"0,00":      0,
		"-23,45":    -2345,
		"2.450,00":  245000,
		"12":        1200,
		"-0,5":      -50,
		"1.000.000": 100000000,
	}
	for in, want := range cases {
		got, err := ParseAmount(in)
		if err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"abc", "1,234", "--1"} {
		if _, err := ParseAmount(in); err == nil {
			t.Errorf("ParseAmount(%q) succeeded, want error", in)
		}
	}
}

func TestSummarize(t *testing.T) {
	txns, err := Read(strings.NewReader(sample + "01.06.2024;Strom;-60,00\n"))
	if err != nil {
		t.Fatal(err)
	}
	ms := Summarize(txns)
	if len(ms) != 2 || ms[0].Key != "2024-05" || ms[1].Key != "2024-06" {
		t.Fatalf("months = %+v", ms)
	}
	if ms[0].InCents != 245000 || ms[0].OutCents != 91345 {
		t.Errorf("may = %+v", ms[0])
	}
}
