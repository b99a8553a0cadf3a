module github.com/tcheng/alertd

go 1.22
