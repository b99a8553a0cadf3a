module github.com/pbrandt/confini

go 1.22
