module github.com/heed-go/heed

go 1.26.0
