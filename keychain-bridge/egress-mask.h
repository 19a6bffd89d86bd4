/* egress-mask.h — the forms in which a secret can travel, found in bytes: masked in what an
 * origin sends back, reported in what the guest sends.
 *
 * A host that reflects what it receives can send a credential back encoded, so besides its
 * literal bytes these forms are found:
 *   - base64, standard and URL alphabets, at each of the three alignments a secret can have
 *     inside a longer base64 text (only the characters the secret alone decides);
 *   - hex, lower and upper case;
 *   - the bytes reversed;
 *   - each byte literal or escaped the way URLs, JSON, JavaScript and HTML escape it (%XX in
 *     either case, + for a space, \uXXXX, \xXX, \/ \" \' \\, &#NN;, &#xHH;, &amp; &lt; &gt;
 *     &quot; &apos;), mixed freely within one occurrence.
 * Other transformations (compression, pieces, double encoding, encryption...) are not found:
 * SECURITY.md K5 says what that leaves.
 *
 * An EgressMask is immutable once built and may be shared between threads (refcounted). Its
 * memory holds secret-derived bytes and is wiped when freed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EgressMask EgressMask;

EgressMask *egress_mask_new (void);
EgressMask *egress_mask_ref (EgressMask *mask);
void egress_mask_unref (EgressMask *mask);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EgressMask, egress_mask_unref)

/* Adds a secret (copied) and all its forms; id is what a scan reports for it. Not after the
 * mask is shared. */
void egress_mask_add_secret (EgressMask *mask, const char *secret, guint id);
/* Adds exactly these bytes (copied), no other form (the basic-auth value made from a secret). */
void egress_mask_add_literal (EgressMask *mask, const char *bytes, guint id);

/* TRUE when nothing was added. */
gboolean egress_mask_is_empty (const EgressMask *mask);

/* The longest form, minus one: a stream keeps this many bytes back until it knows what
 * follows them. */
gsize egress_mask_get_window (const EgressMask *mask);

/* Finds the forms in buf. mask: every occurrence is overwritten with '*' (same length, so
 * framing stays right); otherwise the scan stops at the first. Returns the id of the first
 * occurrence found, or -1. */
gint64 egress_mask_scan (const EgressMask *mask, guint8 *buf, gsize len, gboolean mask_found);

/* A byte stream passed through a mask: what may go on now, keeping back the window. */
typedef struct _EgressMaskStream EgressMaskStream;

/* max_feed: the most bytes one egress_mask_stream_feed () takes. */
EgressMaskStream *egress_mask_stream_new (EgressMask *mask, gboolean mask_found, gsize max_feed);
void egress_mask_stream_free (EgressMaskStream *stream);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EgressMaskStream, egress_mask_stream_free)

/* Adds n (<= max_feed) bytes; last: nothing follows. *ret_out / *ret_len: the bytes that may go
 * on now (valid until the next call). Returns the id of a secret found, or -1. A masking stream
 * keeps the last window bytes back until it knows what follows them. A reporting stream
 * (mask_found FALSE) scans the bytes where they are and passes them all on, unless a form was
 * found (then none): a form split between two feeds is found in the second, its first part
 * having gone on already. */
gint64 egress_mask_stream_feed (EgressMaskStream *stream,
                                const void *data,
                                gsize n,
                                gboolean last,
                                const guint8 **ret_out,
                                gsize *ret_len);

G_END_DECLS
