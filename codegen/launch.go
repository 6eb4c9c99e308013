package codegen

// Launch is one GPU kernel launch of a lowered function: the device
// function Name on a grid of Grid blocks of Block threads, given the
// buffers Args (indices into the function's parameters followed by its
// device temporaries, see Module).
type Launch struct {
	Name  string
	Grid  [3]int
	Block [3]int
	Args  []int
}
