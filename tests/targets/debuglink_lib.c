/* A library whose internal function is only in its symbol table: the
 * tests strip it and leave the symbols in a separate debug file named by
 * .gnu_debuglink, as distributions ship them. */
__attribute__((noinline, used)) static int sb_internal_helper(int x)
{
	asm volatile("" ::: "memory");
	return x * 7 + 3;
}

int sb_exported_entry(int x)
{
	return sb_internal_helper(x) + 1;
}
