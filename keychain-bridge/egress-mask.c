/* egress-mask.c — the forms of secrets in bytes (see egress-mask.h).
 *
 * Fixed forms (hex, base64 at three alignments, reversed) are compared as they are. The
 * literal and escaped forms are one matcher: each byte of the secret may be read from one
 * literal byte or one escape, so "%2F", "\/" and "/" all stand for "/", mixed in any way.
 * Every request body the guest sends goes through a scan, so most bytes must cost next to
 * nothing: a table of the bytes that can start some form skips eight at a time, and a table of
 * the pairs of bytes that can start one leaves the matchers only the rare real candidates.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-mask.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* "&#x" + 6 hex digits + ";": the longest escape of one byte that is read */
#define MAX_UNIT 10
/* A byte such as "%" can be read as itself or as the start of an escape: a few ways through
 * at most (more are dropped; a form that needs them is not found). */
#define MAX_WAYS 8
#define MIN_FIXED 3

enum {
        STARTS_FIXED = 1,
        STARTS_ESCAPED = 2,
};

typedef struct {
        guint8 *bytes;
        gsize len;
        guint id;
} Form;

struct _EgressMask {
        GArray *fixed; /* of Form: compared as they are */
        GArray *escaped; /* of Form: each byte literal or escaped */
        guint8 starts[256]; /* STARTS_*: what may begin at a byte */
        /* the same as nibble tables: byte b may start a form only if
         * lo_nibbles[b & 15] & hi_nibbles[b >> 4] (more pass than start: a prefilter) */
        guint8 lo_nibbles[16], hi_nibbles[16];
        guint8 pairs[65536 / 8]; /* bit (a << 8 | b): some form may begin with a, b */
        gsize longest;
};

static void
add_pair (EgressMask *mask, guint8 a, guint8 b)
{
        guint k = (guint) a << 8 | b;

        mask->pairs[k >> 3] |= (guint8) (1u << (k & 7));
}

/* A bucket per high nibble (two nibbles share one of the 8): a byte passes the prefilter when
 * its low nibble was seen with a high nibble of its bucket. */
static void
add_start (EgressMask *mask, guint8 b, guint8 flags)
{
        guint8 bucket = (guint8) (1u << ((b >> 4) & 7));

        mask->starts[b] |= flags;
        mask->lo_nibbles[b & 15] |= bucket;
        mask->hi_nibbles[b >> 4] |= bucket;
}

static gboolean
has_pair (const EgressMask *mask, guint8 a, guint8 b)
{
        guint k = (guint) a << 8 | b;

        return (mask->pairs[k >> 3] >> (k & 7)) & 1;
}

static void
form_clear (gpointer p)
{
        Form *f = p;

        explicit_bzero (f->bytes, f->len);
        g_free (f->bytes);
}

EgressMask *
egress_mask_new (void)
{
        EgressMask *mask = g_atomic_rc_box_new0 (EgressMask);

        mask->fixed = g_array_new (FALSE, FALSE, sizeof (Form));
        mask->escaped = g_array_new (FALSE, FALSE, sizeof (Form));
        g_array_set_clear_func (mask->fixed, form_clear);
        g_array_set_clear_func (mask->escaped, form_clear);
        return mask;
}

EgressMask *
egress_mask_ref (EgressMask *mask)
{
        return g_atomic_rc_box_acquire (mask);
}

static void
mask_clear (gpointer p)
{
        EgressMask *mask = p;

        g_array_unref (mask->fixed);
        g_array_unref (mask->escaped);
}

void
egress_mask_unref (EgressMask *mask)
{
        if (mask)
                g_atomic_rc_box_release_full (mask, mask_clear);
}

gboolean
egress_mask_is_empty (const EgressMask *mask)
{
        return mask->fixed->len == 0 && mask->escaped->len == 0;
}

gsize
egress_mask_get_window (const EgressMask *mask)
{
        return mask->longest > 0 ? mask->longest - 1 : 0;
}

/* Building ------------------------------------------------------------------------------------- */

/* Takes bytes. */
static void
add_fixed (EgressMask *mask, guint8 *bytes, gsize len, guint id)
{
        Form f = { bytes, len, id };
        gboolean known = len < MIN_FIXED; /* too short to mean anything */

        for (guint i = 0; i < mask->fixed->len && !known; i++) {
                const Form *o = &g_array_index (mask->fixed, Form, i);

                known = o->len == len && memcmp (o->bytes, bytes, len) == 0;
        }
        if (known) {
                form_clear (&f);
                return;
        }
        g_array_append_val (mask->fixed, f);
        add_start (mask, bytes[0], STARTS_FIXED);
        add_pair (mask, bytes[0], bytes[1]);
        mask->longest = MAX (mask->longest, len);
}

static void
add_hex (EgressMask *mask, const guint8 *s, gsize len, guint id, gboolean upper)
{
        static const char lower_digits[] = "0123456789abcdef", upper_digits[] = "0123456789ABCDEF";
        const char *digits = upper ? upper_digits : lower_digits;
        guint8 *hex = g_malloc (2 * len);

        for (gsize i = 0; i < len; i++) {
                hex[2 * i] = (guint8) digits[s[i] >> 4];
                hex[2 * i + 1] = (guint8) digits[s[i] & 0xf];
        }
        add_fixed (mask, hex, 2 * len, id);
}

static void
add_reversed (EgressMask *mask, const guint8 *s, gsize len, guint id)
{
        guint8 *r = g_malloc (len);

        for (gsize i = 0; i < len; i++)
                r[i] = s[len - 1 - i];
        add_fixed (mask, r, len, id);
}

/* The characters of base64(k bytes, secret, ...) that only the secret decides: character i
 * covers bits 6i..6i+5, the secret bits 8k..8(k+len)-1. */
static void
add_base64 (EgressMask *mask, const guint8 *s, gsize len, guint id, guint k)
{
        g_autofree guint8 *in = g_malloc0 (k + len);
        g_autofree char *enc = NULL;
        gsize first = (8 * k + 5) / 6, end = 8 * (k + len) / 6;
        guint8 *std, *url;

        memcpy (in + k, s, len);
        enc = g_base64_encode (in, k + len);
        explicit_bzero (in, k + len);
        if (end > first) {
                std = g_memdup2 (enc + first, end - first);
                url = g_memdup2 (enc + first, end - first);
                for (gsize i = 0; i < end - first; i++)
                        url[i] = url[i] == '+' ? '-' : url[i] == '/' ? '_' : url[i];
                add_fixed (mask, std, end - first, id);
                add_fixed (mask, url, end - first, id);
        }
        explicit_bzero (enc, strlen (enc));
}

/* The bytes a reading of c (literal or escaped) can begin with. */
static guint
first_bytes (guint8 c, guint8 out[5])
{
        guint n = 0;

        out[n++] = c;
        out[n++] = '%';
        out[n++] = '\\';
        out[n++] = '&';
        if (c == ' ')
                out[n++] = '+';
        return n;
}

/* The pairs an escaped or literal reading of s can begin with. */
static void
add_escaped_pairs (EgressMask *mask, const guint8 *s, gsize len)
{
        static const char hex[] = "0123456789abcdef0123456789ABCDEF";
        guint8 next[5];
        guint n = len > 1 ? first_bytes (s[1], next) : 0;

        for (guint i = 0; i < n; i++) {
                add_pair (mask, s[0], next[i]);
                if (s[0] == ' ')
                        add_pair (mask, '+', next[i]);
        }
        for (guint b = 0; len == 1 && b < 256; b++)
                add_pair (mask, s[0], (guint8) b);
        add_pair (mask, '%', (guint8) hex[s[0] >> 4]);
        add_pair (mask, '%', (guint8) hex[16 + (s[0] >> 4)]);
        add_pair (mask, '\\', 'u');
        add_pair (mask, '\\', 'x');
        add_pair (mask, '\\', s[0]);
        add_pair (mask, '&', '#');
        if (s[0] == '&' || s[0] == '\'')
                add_pair (mask, '&', 'a');
        if (s[0] == '<' || s[0] == '>')
                add_pair (mask, '&', s[0] == '<' ? 'l' : 'g');
        if (s[0] == '"')
                add_pair (mask, '&', 'q');
}

void
egress_mask_add_secret (EgressMask *mask, const char *secret, guint id)
{
        const guint8 *s = (const guint8 *) secret;
        gsize len = strlen (secret);
        Form f = { g_memdup2 (s, len), len, id };

        g_return_if_fail (len > 0);
        g_array_append_val (mask->escaped, f);
        add_start (mask, s[0], STARTS_ESCAPED);
        if (s[0] == ' ')
                add_start (mask, '+', STARTS_ESCAPED);
        add_start (mask, '%', STARTS_ESCAPED);
        add_start (mask, '\\', STARTS_ESCAPED);
        add_start (mask, '&', STARTS_ESCAPED);
        add_escaped_pairs (mask, s, len);
        mask->longest = MAX (mask->longest, MAX_UNIT * len);
        add_hex (mask, s, len, id, FALSE);
        add_hex (mask, s, len, id, TRUE);
        add_reversed (mask, s, len, id);
        for (guint k = 0; k < 3; k++)
                add_base64 (mask, s, len, id, k);
}

void
egress_mask_add_literal (EgressMask *mask, const char *bytes, guint id)
{
        add_fixed (mask, (guint8 *) g_strdup (bytes), strlen (bytes), id);
}

/* Matching ------------------------------------------------------------------------------------- */

static int
hex_value (guint8 c)
{
        return g_ascii_isxdigit (c) ? g_ascii_xdigit_value ((char) c) : -1;
}

/* The value of n hex digits at p, or -1. */
static int
hex_run (const guint8 *p, gsize n)
{
        int v = 0;

        for (gsize i = 0; i < n; i++) {
                int d = hex_value (p[i]);

                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/* "&#NN;" or "&#xHH;" at buf (after "&#"): its end, or 0. */
static gsize
numeric_entity (const guint8 *buf, gsize len, gsize q, guint8 *ret_value)
{
        gboolean hex = q < len && (buf[q] == 'x' || buf[q] == 'X');
        gsize start = q + (hex ? 1 : 0), i = start;
        guint v = 0;

        for (; i < len && i - start < 7 && buf[i] != ';'; i++) {
                int d = hex ? hex_value (buf[i]) : g_ascii_isdigit (buf[i]) ? buf[i] - '0' : -1;

                if (d < 0)
                        return 0;
                v = v * (hex ? 16 : 10) + (guint) d;
        }
        if (i == start || i >= len || buf[i] != ';' || v >= 0x80)
                return 0;
        *ret_value = (guint8) v;
        return i + 1;
}

static gsize
named_entity (const guint8 *buf, gsize len, gsize q, guint8 *ret_value)
{
        static const struct {
                const char *name;
                char value;
        } names[] = {
                { "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "apos;", '\'' }
        };

        for (gsize i = 0; i < G_N_ELEMENTS (names); i++) {
                gsize n = strlen (names[i].name);

                if (len - q >= n && memcmp (buf + q, names[i].name, n) == 0) {
                        *ret_value = (guint8) names[i].value;
                        return q + n;
                }
        }
        return 0;
}

/* The escape at buf[q] (a '\\' or '&' or '%'): its end and the byte it stands for, or 0. */
static gsize
read_escape (const guint8 *buf, gsize len, gsize q, guint8 *ret_value)
{
        int v;

        if (buf[q] == '%' && len - q >= 3 && (v = hex_run (buf + q + 1, 2)) >= 0) {
                *ret_value = (guint8) v;
                return q + 3;
        }
        if (buf[q] == '\\' && len - q >= 2) {
                if (buf[q + 1] == 'u' && len - q >= 6 && (v = hex_run (buf + q + 2, 4)) >= 0 &&
                    v < 0x80) {
                        *ret_value = (guint8) v;
                        return q + 6;
                }
                if (buf[q + 1] == 'x' && len - q >= 4 && (v = hex_run (buf + q + 2, 2)) >= 0) {
                        *ret_value = (guint8) v;
                        return q + 4;
                }
                if (strchr ("/\"'\\", buf[q + 1]) && buf[q + 1]) {
                        *ret_value = buf[q + 1];
                        return q + 2;
                }
                return 0;
        }
        if (buf[q] == '&' && len - q >= 2)
                return buf[q + 1] == '#' ? numeric_entity (buf, len, q + 2, ret_value)
                                         : named_entity (buf, len, q + 1, ret_value);
        return 0;
}

static void
add_way (gsize *ways, guint *n, gsize end)
{
        for (guint i = 0; i < *n; i++)
                if (ways[i] == end)
                        return;
        if (*n < MAX_WAYS)
                ways[(*n)++] = end;
}

/* The end of the longest reading of f at buf[p], each byte literal or escaped; 0: none. */
static gsize
match_escaped (const Form *f, const guint8 *buf, gsize len, gsize p)
{
        gsize ways[MAX_WAYS], next[MAX_WAYS], end = 0;
        guint n = 1;

        ways[0] = p;
        for (gsize k = 0; k < f->len && n > 0; k++) {
                guint m = 0;

                for (guint i = 0; i < n; i++) {
                        gsize q = ways[i], e;
                        guint8 v;

                        if (q >= len)
                                continue;
                        if (buf[q] == f->bytes[k])
                                add_way (next, &m, q + 1);
                        else if (buf[q] == '+' && f->bytes[k] == ' ')
                                add_way (next, &m, q + 1);
                        if ((e = read_escape (buf, len, q, &v)) > 0 && v == f->bytes[k])
                                add_way (next, &m, e);
                }
                memcpy (ways, next, m * sizeof *ways);
                n = m;
        }
        for (guint i = 0; i < n; i++)
                end = MAX (end, ways[i]);
        return end;
}

/* The longest form at buf[p]: its length (0: none) and id. */
static gsize
match_at (const EgressMask *mask, const guint8 *buf, gsize len, gsize p, guint *ret_id)
{
        guint8 flags = mask->starts[buf[p]];
        gsize best = 0;

        if (flags & STARTS_FIXED) {
                for (guint i = 0; i < mask->fixed->len; i++) {
                        const Form *f = &g_array_index (mask->fixed, Form, i);

                        if (f->bytes[0] == buf[p] && f->len <= len - p && f->len > best &&
                            memcmp (f->bytes, buf + p, f->len) == 0) {
                                best = f->len;
                                *ret_id = f->id;
                        }
                }
        }
        if (flags & STARTS_ESCAPED) {
                for (guint i = 0; i < mask->escaped->len; i++) {
                        const Form *f = &g_array_index (mask->escaped, Form, i);
                        gsize end = match_escaped (f, buf, len, p);

                        if (end > p + best) {
                                best = end - p;
                                *ret_id = f->id;
                        }
                }
        }
        return best;
}

/* The first position from p on where a form may start, or a little before it; len if none. */
static gsize
skip_scalar (const EgressMask *mask, const guint8 *buf, gsize p, gsize len)
{
        const guint8 *s = mask->starts;

        for (; p + 8 <= len; p += 8) {
                const guint8 *b = buf + p;

                if (s[b[0]] | s[b[1]] | s[b[2]] | s[b[3]] | s[b[4]] | s[b[5]] | s[b[6]] | s[b[7]])
                        return p;
        }
        return p;
}

#if defined(__x86_64__)
/* Sixteen bytes at a time through the nibble tables (two byte shuffles). */
__attribute__ ((target ("ssse3"))) static gsize
skip_ssse3 (const EgressMask *mask, const guint8 *buf, gsize p, gsize len)
{
        const __m128i lo_table = _mm_loadu_si128 ((const __m128i *) mask->lo_nibbles);
        const __m128i hi_table = _mm_loadu_si128 ((const __m128i *) mask->hi_nibbles);
        const __m128i low4 = _mm_set1_epi8 (0x0f);

        for (; p + 16 <= len; p += 16) {
                __m128i v = _mm_loadu_si128 ((const __m128i *) (buf + p));
                __m128i lo = _mm_shuffle_epi8 (lo_table, _mm_and_si128 (v, low4));
                __m128i hi =
                        _mm_shuffle_epi8 (hi_table, _mm_and_si128 (_mm_srli_epi16 (v, 4), low4));
                int none = _mm_movemask_epi8 (
                        _mm_cmpeq_epi8 (_mm_and_si128 (lo, hi), _mm_setzero_si128 ()));

                if (none != 0xffff)
                        return p + (gsize) __builtin_ctz ((unsigned) ~none & 0xffff);
        }
        return p;
}
#endif

static gsize
skip (const EgressMask *mask, const guint8 *buf, gsize p, gsize len)
{
#if defined(__x86_64__)
        static int ssse3 = -1;

        if (G_UNLIKELY (ssse3 < 0))
                ssse3 = __builtin_cpu_supports ("ssse3") ? 1 : 0;
        if (ssse3)
                return skip_ssse3 (mask, buf, p, len);
#endif
        return skip_scalar (mask, buf, p, len);
}

gint64
egress_mask_scan (const EgressMask *mask, guint8 *buf, gsize len, gboolean mask_found)
{
        gint64 found = -1;
        gsize p = 0;

        while (p < len) {
                const guint8 *s = mask->starts, *b;
                gsize n;
                guint id = 0;

                if ((p = skip (mask, buf, p, len)) >= len)
                        break;
                b = buf + p;
                if (!s[b[0]] || (p + 1 < len && !has_pair (mask, b[0], b[1]))) {
                        p++;
                        continue;
                }
                if ((n = match_at (mask, buf, len, p, &id)) == 0) {
                        p++;
                        continue;
                }
                if (found < 0)
                        found = id;
                if (!mask_found)
                        return found;
                memset (buf + p, '*', n);
                p += n;
        }
        return found;
}

/* Streams -------------------------------------------------------------------------------------- */

struct _EgressMaskStream {
        EgressMask *mask;
        gboolean mask_found;
        guint8 *buf;
        gsize cap, len;
        gsize passed; /* masking: handed out by the last feed, dropped by the next */
};

EgressMaskStream *
egress_mask_stream_new (EgressMask *mask, gboolean mask_found, gsize max_feed)
{
        EgressMaskStream *s = g_new0 (EgressMaskStream, 1);
        gsize window = egress_mask_get_window (mask);

        s->mask = egress_mask_ref (mask);
        s->mask_found = mask_found;
        /* masking keeps the window and takes a feed; reporting keeps the window only (its tail),
         * and looks across the seam with the start of the next feed */
        s->cap = mask_found ? window + max_feed : 2 * window;
        s->buf = g_malloc (MAX (s->cap, 1));
        return s;
}

void
egress_mask_stream_free (EgressMaskStream *s)
{
        if (!s)
                return;
        explicit_bzero (s->buf, MAX (s->cap, 1));
        g_free (s->buf);
        egress_mask_unref (s->mask);
        g_free (s);
}

/* Reporting: data is scanned where it is (no copy) and passed on whole; the seam with what came
 * before (the last window bytes, kept) is scanned apart. */
static gint64
report (EgressMaskStream *s, const guint8 *data, gsize n)
{
        gsize window = egress_mask_get_window (s->mask), head = MIN (n, window);
        gint64 found;

        memcpy (s->buf + s->len, data, head);
        found = egress_mask_scan (s->mask, s->buf, s->len + head, FALSE);
        /* only read: nothing is masked when reporting */
        if (found < 0)
                found = egress_mask_scan (s->mask, (guint8 *) data, n, FALSE);
        if (n >= window) {
                memcpy (s->buf, data + n - window, window);
                s->len = window;
        } else {
                s->len += n;
                memmove (s->buf, s->buf + s->len - MIN (s->len, window), MIN (s->len, window));
                s->len = MIN (s->len, window);
        }
        return found;
}

gint64
egress_mask_stream_feed (EgressMaskStream *s,
                         const void *data,
                         gsize n,
                         gboolean last,
                         const guint8 **ret_out,
                         gsize *ret_len)
{
        gsize window = egress_mask_get_window (s->mask), keep;
        gint64 found;

        if (!s->mask_found) {
                found = report (s, data, n);
                *ret_out = data;
                *ret_len = found >= 0 ? 0 : n;
                return found;
        }
        if (s->passed > 0) {
                memmove (s->buf, s->buf + s->passed, s->len - s->passed);
                s->len -= s->passed;
                s->passed = 0;
        }
        g_return_val_if_fail (n <= s->cap - s->len, -1);
        if (n > 0) /* an empty last piece may come as NULL */
                memcpy (s->buf + s->len, data, n);
        s->len += n;
        found = egress_mask_scan (s->mask, s->buf, s->len, TRUE);
        keep = last ? 0 : MIN (s->len, window);
        *ret_out = s->buf;
        *ret_len = s->len - keep;
        s->passed = *ret_len;
        return found;
}
