module github.com/ana-lima/tally

go 1.22
