package local

// For the external tests (package local_test).
var TestSpec = testSpec
