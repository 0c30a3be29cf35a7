/* Loader for digits.csv.gz: 64 comma-separated pixel values then the label, one image a line.
 * Strict on purpose: a truncated or wrong file must fail loudly, not train on garbage. */
#include "digits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Parses one line into pixels and label; returns 0 or -1 with err set. */
static int parse_line(const char* path, int lineno, char* line, float* px, int* label, char* err,
                      size_t errlen) {
  char* p = line;
  for (int field = 0; field <= kDigitsPixels; ++field) {
    char* end;
    errno = 0;
    long v = strtol(p, &end, 10);
    int last = field == kDigitsPixels;
    /* The file writes integers; accept a trailing ".0" as some exports do. */
    if (end != p && end[0] == '.' && end[1] == '0') end += 2;
    if (end == p || errno) {
      snprintf(err, errlen, "%s:%d: field %d is not an integer (near \"%.12s\")", path, lineno,
               field + 1, p);
      return -1;
    }
    if (!last && (v < 0 || v > 16)) {
      snprintf(err, errlen, "%s:%d: pixel %d is %ld, outside 0..16", path, lineno, field + 1, v);
      return -1;
    }
    if (last && (v < 0 || v >= kDigitsClasses)) {
      snprintf(err, errlen, "%s:%d: label is %ld, outside 0..9", path, lineno, v);
      return -1;
    }
    if (last) {
      *label = (int)v;
      while (*end == '\r' || *end == '\n' || *end == ' ') ++end;
      if (*end) {
        snprintf(err, errlen, "%s:%d: more than %d fields (extra \"%.12s\")", path, lineno,
                 kDigitsPixels + 1, end);
        return -1;
      }
    } else {
      px[field] = (float)v / 16.0f;
      if (*end != ',') {
        snprintf(err, errlen, "%s:%d: %d fields, expected %d", path, lineno, field + 1,
                 kDigitsPixels + 1);
        return -1;
      }
      p = end + 1;
    }
  }
  return 0;
}

int digits_load(const char* path, digits_t* out, char* err, size_t errlen) {
  memset(out, 0, sizeof *out);
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open the digits data set %s: %s (./run.sh or ./test.sh fetch it; "
             "scripts/common.sh: tsr_fetch_digits)", path, strerror(errno ? errno : ENOENT));
    return -1;
  }
  out->x = malloc(sizeof(float) * kDigitsRows * kDigitsPixels);
  out->y = malloc(sizeof(int) * kDigitsRows);
  char line[1024];
  int lineno = 0, rc = 0;
  while (gzgets(f, line, sizeof line)) {
    ++lineno;
    int zerr = Z_OK;
    const char* zmsg = gzerror(f, &zerr);
    if (!strchr(line, '\n') && zerr != Z_OK && zerr != Z_STREAM_END) { /* a cut-off .gz */
      snprintf(err, errlen, "%s:%d: read error: %s (truncated download?)", path, lineno, zmsg);
      rc = -1;
      break;
    }
    if (!strchr(line, '\n') && !gzeof(f)) {
      snprintf(err, errlen, "%s:%d: line longer than %zu bytes", path, lineno, sizeof line - 1);
      rc = -1;
      break;
    }
    if (lineno > kDigitsRows) {
      snprintf(err, errlen, "%s:%d: more than %d rows", path, lineno, kDigitsRows);
      rc = -1;
      break;
    }
    if (parse_line(path, lineno, line, out->x + (size_t)(lineno - 1) * kDigitsPixels,
                   &out->y[lineno - 1], err, errlen)) {
      rc = -1;
      break;
    }
  }
  int zerr = Z_OK;
  const char* zmsg = gzerror(f, &zerr);
  if (rc == 0 && zerr != Z_OK && zerr != Z_STREAM_END) {
    snprintf(err, errlen, "%s: read error after line %d: %s", path, lineno, zmsg);
    rc = -1;
  }
  if (rc == 0 && lineno != kDigitsRows) {
    snprintf(err, errlen, "%s: %d rows, expected %d (truncated?)", path, lineno, kDigitsRows);
    rc = -1;
  }
  gzclose(f);
  out->n = lineno;
  if (rc) digits_free(out);
  return rc;
}

void digits_free(digits_t* d) {
  free(d->x);
  free(d->y);
  memset(d, 0, sizeof *d);
}

void digits_shuffle(int* order, int n, unsigned long long seed) {
  for (int i = 0; i < n; ++i) order[i] = i;
  for (int i = n - 1; i > 0; --i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    int j = (int)((seed >> 33) % (unsigned long long)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}
