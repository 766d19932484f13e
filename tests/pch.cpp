// Compiled only to build the tests' precompiled header (Note [Precompiled headers] in
// CMakeLists.txt); every test binary reuses it.
