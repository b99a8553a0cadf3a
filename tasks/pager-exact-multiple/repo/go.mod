module github.com/lena-fischer/shelf

go 1.22
