"""Pure domain code shared by the functions, the local runtime and the tools."""
