/* corral-policy-private.h — what the managed policy's files share inside the library:
 * one file's parsed values (corral-policy-parse.c), the checks and matching of each format
 * (corral-policy-keys.c), and the merge (corral-policy.c).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-policy.h"

#include <glib/gi18n.h>

G_BEGIN_DECLS

/* Every error ends with what the person can do (translators see each sentence whole). */
#define CORRAL_POLICY_ASK_IT N_ ("Ask your IT department to correct it.")

/* One source's value of one key, validated. */
typedef struct {
        gboolean locked;
        gboolean b; /* BOOL */
        gint64 i; /* INT; ENUM: the index */
        char *s; /* ENUM (the name), VERSION, STRING */
        char **list; /* DENY_LIST, ALLOW_LIST */
        cJSON *objects; /* OBJECT_LIST: an array */
} PolicyValue;

void policy_value_free (PolicyValue *value);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (PolicyValue, policy_value_free)

/* One key's merged setting (corral-policy.c), read by corral-policy-get.c. */
typedef struct {
        gboolean set, locked;
        char **sources; /* NULL-terminated */
        gboolean b;
        gint64 i;
        char *s;
        char **list; /* DENY_LIST: the union */
        CorralPolicyAllowList *allow; /* ALLOW_LIST: one per source; items owned */
        guint n_allow;
        cJSON *objects; /* OBJECT_LIST */
} PolicyMerged;

struct _CorralPolicy {
        gatomicrefcount ref;
        char **sources;
        char *digest;
        guint n_keys;
        PolicyMerged *merged; /* one per key of the table */
};

/* Parses one source's text into values[k] (transfer full; NULL: key k not set), one per key of
 * the table. On error values is left as it was. */
gboolean policy_source_parse (
        const char *origin, const char *text, gsize len, PolicyValue **values, GError **error);

/* The index of key in the table. */
guint policy_key_index (const CorralPolicyKey *key);

/* Checks one text of format. On success *ret_text (transfer full) is what is kept (a folder
 * in canonical form, a host in lower case). On failure ret_text is untouched. */
gboolean policy_format_check (CorralPolicyFormat format, const char *text, char **ret_text);

/* Whether candidate matches entry (a kept text of format). */
gboolean
policy_format_matches (CorralPolicyFormat format, const char *entry, const char *candidate);

/* "MAJOR.MINOR.PATCH" with each part at most 6 digits; strict: no more text after it. */
gboolean policy_version_parse (const char *text, gboolean strict, guint64 ret_parts[3]);
int policy_version_compare (const guint64 a[3], const guint64 b[3]);

G_END_DECLS
