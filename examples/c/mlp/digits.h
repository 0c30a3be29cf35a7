/* The sklearn "digits" set (1797 8x8 images, pixels 0..16, labels 0..9) read from the
 * digits.csv.gz that Debian's python3-sklearn ships (scripts/common.sh: tsr_fetch_digits). */
#ifndef TSR_EXAMPLES_MLP_DIGITS_H
#define TSR_EXAMPLES_MLP_DIGITS_H

#include <stddef.h>

enum { kDigitsRows = 1797, kDigitsPixels = 64, kDigitsClasses = 10 };

typedef struct {
  int n;    /* samples */
  float* x; /* n * kDigitsPixels, scaled to [0, 1] */
  int* y;   /* n labels */
} digits_t;

/* Reads FILE (gzip or plain CSV). On failure returns -1 with a message in err naming the file
 * and, for bad content, the line and the value. */
int digits_load(const char* path, digits_t* out, char* err, size_t errlen);
void digits_free(digits_t* d);

/* The same permutation of 0..n-1 on every rank (a fixed-seed Fisher-Yates shuffle). */
void digits_shuffle(int* order, int n, unsigned long long seed);

#endif
