module loadlab/targets/go-nethttp

go 1.22
