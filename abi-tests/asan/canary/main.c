/* canary: in bounds (prints 7), then one byte past the buffer, which an
 * AddressSanitizer build must stop with a heap-buffer-overflow report. */
#include <stddef.h>
#include <stdio.h>
unsigned char asan_canary_read(size_t i);
int main(void)
{
	printf("in bounds: %d\n", asan_canary_read(15));
	fflush(stdout);
	printf("past the end: %d\n", asan_canary_read(16));
	return 0;
}
