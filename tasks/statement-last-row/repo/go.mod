module github.com/jonas-weber/bankcsv

go 1.22
