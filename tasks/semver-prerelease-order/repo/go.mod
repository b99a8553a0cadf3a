module github.com/mkowalski/relver

go 1.22
