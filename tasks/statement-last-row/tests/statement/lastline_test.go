package statement

import (
	"strings"
	"testing"
)

func TestReadWithoutTrailingNewline(t *testing.T) {
	in := "Buchungstag;Verwendungszweck;Betrag\n" +
		"02.05.2024;REWE Markt;-23,45\n" +
		"03.05.2024;Gehalt Mai;2.450,00\n" +
		"15.05.2024;Miete;-890,00"
	txns, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(txns) != 3 {
		t.Fatalf("got %d transactions, want 3", len(txns))
	}
	if last := txns[2]; last.Description != "Miete" || last.Cents != -89000 {
		t.Errorf("last = %+v", last)
	}
}

func TestReadCRLFWithoutTrailingNewline(t *testing.T) {
	in := "Buchungstag;Verwendungszweck;Betrag\r\n" +
		"02.05.2024;REWE Markt;-23,45\r\n" +
		"03.05.2024;Gehalt Mai;2.450,00"
	txns, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(txns) != 2 || txns[1].Cents != 245000 || txns[1].Description != "Gehalt Mai" {
		t.Fatalf("got %+v", txns)
	}
}

func TestReadSingleLineWithoutNewline(t *testing.T) {
	txns, err := Read(strings.NewReader("Buchungstag;Verwendungszweck;Betrag\n01.06.2024;Strom;-60,00"))
	if err != nil {
		t.Fatal(err)
	}
	if len(txns) != 1 || txns[0].Cents != -6000 {
		t.Fatalf("got %+v", txns)
	}
}

func TestReadBadLastLineWithoutNewline(t *testing.T) {
	_, err := Read(strings.NewReader("h;h;h\n02.05.2024;ok;1,00\n03.05.2024;broken"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err = %v, want a line 3 error", err)
	}
}

func TestReadTrailingBlankLines(t *testing.T) {
	txns, err := Read(strings.NewReader("h;h;h\n02.05.2024;a;1,00\n\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(txns) != 1 {
		t.Fatalf("got %d transactions, want 1", len(txns))
	}
}
