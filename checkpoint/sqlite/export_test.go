package sqlite

// OpenWithPragmas opens like OpenOptions, with pragmas added to every
// connection's.
var OpenWithPragmas = openOptions
