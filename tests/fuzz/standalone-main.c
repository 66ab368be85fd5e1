/*
 * standalone-main.c -- run a libFuzzer target without libFuzzer: each
 * argument is a file (an input) or a directory (every file in it), run
 * once, in order.  Used by tools/coverage.sh (gcc --coverage builds), so
 * that the fuzz corpus counts in the coverage of src/.
 * Prints "fuzz-standalone: N inputs" at the end; a broken invariant
 * aborts as under libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ninputs;

static void
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
		perror(path);
		exit(2);
	}
	rewind(f);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	ninputs++;
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int
main(int argc, char **argv)
{
	int i, j, n;

	LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		struct stat st;
		struct dirent **names;

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			run_file(argv[i]);
			continue;
		}
		if ((n = scandir(argv[i], &names, NULL, by_name)) < 0) {
			perror(argv[i]);
			return 2;
		}
		for (j = 0; j < n; j++) {
			char path[4096];

			if (names[j]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i],
				    names[j]->d_name);
				if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
					run_file(path);
			}
			free(names[j]);
		}
		free(names);
	}
	printf("fuzz-standalone: %d inputs\n", ninputs);
	return 0;
}
