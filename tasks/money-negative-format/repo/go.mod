module github.com/hbauer/invoicer

go 1.22
