module tessera

go 1.26.8

require (
	github.com/dmitryikh/leaves v0.0.0-20230708180554-25d19a787328
	github.com/schollz/progressbar/v3 v3.19.1
	go.etcd.io/bbolt v1.4.3
	golang.org/x/term v0.44.0
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.46.0 // indirect
)
