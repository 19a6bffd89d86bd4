/* corral-policy.h — the organisation's managed policy, read once for the app, corralctl,
 * corral-fsd and corral-egressd.
 *
 * IT departments lock Corral's settings in `/etc/corral/managed.json` (-Dmanaged_policy moves
 * it; $CORRAL_MANAGED_POLICY overrides it for tests) plus drop-ins `managed.d/NAME.json` in the
 * same folder. data/managed-policy.schema.json describes the file (a unit test keeps it equal to
 * the key table below):
 *
 *   { "minimumVersion": "1.2.0",
 *     "sharedFolders": { "maxMode": "rw-nodelete", "protectedPaths": [ "deploy/" ] },
 *     "vm": { "maxVcpus": { "value": 2, "locked": false } } }
 *
 * Every key is either a plain value (locked: the person cannot change it) or
 * {"value": V, "locked": false} (a default the person may change); {"value": V, "locked": true}
 * and {"value": V} are locked too. A key set to null is not set.
 *
 * Sources: the main file (missing: skipped), then the drop-ins in byte order of their names:
 * every entry of managed.d named *.json and not starting with '.' (a missing folder has none).
 * At most CORRAL_POLICY_MAX_DROP_INS of them, each at most CORRAL_POLICY_MAX_SIZE bytes; a
 * symlink is followed; anything that is then not a regular file (a folder, a FIFO, a dangling
 * link) is an error, not skipped: a drop-in that silently does not apply is a policy that is
 * weaker than the one IT wrote.
 *
 * Merge, per key, "most restrictive wins": when any source locks the key, the locked values
 * are combined (the defaults for it are ignored) and the result is locked; otherwise the
 * defaults are combined and the result is a default. How values combine is the key's kind
 * (CorralPolicyKind). Which files a setting is "from": for a single value (bool, number,
 * choice, version, text), the files whose value is the result; for lists, every file whose
 * list was combined.
 *
 * Errors: loading fails as a whole (callers then start no task); never a partial or weaker
 * policy. Every error is one sentence naming the file, the line and the key's dotted name,
 * ending "Ask your IT department to correct it." The line of a bad key or value is found
 * approximately: the first occurrence of the quoted key name after its parent's (a name
 * written with \u escapes is not found: the parent's line is given); an entry of a list is
 * reported at the list's line, with its index in the name ("mcp.servers[2].command").
 * Other decisions:
 *  - A key or group written twice in one object is an error (cJSON would keep both).
 *  - Every text is valid UTF-8 without control characters; a "\u0000" escape is refused.
 *  - Folders are absolute and kept in lexical canonical form (g_canonicalize_filename: no
 *    "..", no trailing '/'); matching is lexical, "the folder or inside it": callers pass a
 *    folder whose symlinks they resolved.
 *  - Host patterns follow the egress rules (egress-policy.h): "example.com", "*.example.com"
 *    (names below example.com, not example.com itself), an optional ":PORT"; ASCII
 *    case-insensitive; no IPv6 literals.
 *  - Lists of texts are unions without exact duplicates, at most CORRAL_POLICY_MAX_ITEMS per
 *    file; unknown values of closed sets (providers, audit destinations) are errors: a typo
 *    never silently changes what applies.
 *  - Lists of objects whose items have a "name" (MCP servers, credential bindings): a name
 *    is used once across every file.
 *  - Two sources that set a text that must agree (providers.baseUrl, images.required) to
 *    different values are an error naming both files (only among the values that count:
 *    the locked ones when any is locked).
 *  - The digest is SHA-256 over, for each source in order: its path, a NUL, its length as 8
 *    bytes big-endian, its bytes.
 *
 * A CorralPolicy is immutable once loaded; it may be read from several threads at once.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <glib.h>

#include "corral-share-mode.h"

G_BEGIN_DECLS

#define CORRAL_POLICY_ERROR (corral_policy_error_quark ())
GQuark corral_policy_error_quark (void);

typedef enum {
        CORRAL_POLICY_ERROR_INVALID, /* malformed, too large, not a regular file, conflicting */
        CORRAL_POLICY_ERROR_UNREADABLE, /* exists but cannot be read (permissions, I/O) */
        CORRAL_POLICY_ERROR_BLOCKED, /* a check refused: the message says which rule */
} CorralPolicyError;

/* The largest file read (the main file or a drop-in). */
#define CORRAL_POLICY_MAX_SIZE (1024 * 1024)
/* The most drop-ins read from managed.d. */
#define CORRAL_POLICY_MAX_DROP_INS 64
/* The most entries of one list in one file (protectedPaths, hiddenPaths: as fs-managed.h). */
#define CORRAL_POLICY_MAX_ITEMS 256
/* The longest text of a list or a value (a protected path, as fs-managed.c). */
#define CORRAL_POLICY_MAX_TEXT 4096

/* How the values of one key from several sources combine. */
typedef enum {
        CORRAL_POLICY_KIND_BOOL, /* the key's restrictive value wins */
        CORRAL_POLICY_KIND_INT, /* a range; the smallest wins, or the largest (higher_wins) */
        CORRAL_POLICY_KIND_ENUM, /* one of values; the first in their order wins */
        CORRAL_POLICY_KIND_VERSION, /* "MAJOR.MINOR.PATCH"; the highest wins */
        CORRAL_POLICY_KIND_STRING, /* a text every source must agree on */
        CORRAL_POLICY_KIND_DENY_LIST, /* texts; the union */
        CORRAL_POLICY_KIND_ALLOW_LIST, /* texts, kept per source; allowed if every list allows */
        CORRAL_POLICY_KIND_OBJECT_LIST, /* objects; concatenated in source order */
} CorralPolicyKind;

/* What one text is, how it is checked and how a candidate matches it. */
typedef enum {
        CORRAL_POLICY_FORMAT_TEXT, /* any text; exact match */
        CORRAL_POLICY_FORMAT_NAME, /* a name of at most 256 bytes; exact match */
        CORRAL_POLICY_FORMAT_FOLDER, /* an absolute folder; the folder or inside it matches */
        CORRAL_POLICY_FORMAT_PATTERN, /* a path relative to a shared folder (fs-paths.h) */
        CORRAL_POLICY_FORMAT_HOST, /* a host pattern (see above) */
        CORRAL_POLICY_FORMAT_URL, /* https://..., or http:// to localhost, 127.0.0.1, [::1] */
        CORRAL_POLICY_FORMAT_PROVIDER, /* "anthropic", "openai-compatible" */
        CORRAL_POLICY_FORMAT_ED25519_KEY, /* base64 of 32 bytes (44 characters, padded) */
        CORRAL_POLICY_FORMAT_AUDIT_DESTINATION, /* "journal" */
        CORRAL_POLICY_FORMAT_HEADER, /* an HTTP header name */
        CORRAL_POLICY_FORMAT_ENV_NAME, /* an environment variable's name */
        CORRAL_POLICY_FORMAT_MODE, /* "ro", "rw-nodelete", "rw" */
} CorralPolicyFormat;

typedef enum {
        CORRAL_POLICY_MEMBER_STRING,
        CORRAL_POLICY_MEMBER_STRING_LIST, /* at most max_items texts */
        CORRAL_POLICY_MEMBER_STRING_MAP, /* an object of at most max_items texts */
} CorralPolicyMemberType;

/* One member of the objects of a CORRAL_POLICY_KIND_OBJECT_LIST key. */
typedef struct {
        const char *name;
        CorralPolicyMemberType type;
        CorralPolicyFormat format; /* of each text (a map: of its values; names are ENV_NAME) */
        gboolean required;
        guint max_items;
        const char *description; /* N_() */
} CorralPolicyMember;

/* One key of the policy. */
typedef struct {
        const char *name; /* "group.key", or "key" at the top level */
        CorralPolicyKind kind;
        const char *description; /* one sentence, N_() */
        CorralPolicyFormat format; /* STRING and lists: what each text is */
        gint64 min, max; /* INT */
        gboolean higher_wins; /* INT: the largest value wins instead of the smallest */
        gboolean restrictive; /* BOOL: the value that wins */
        const char *const *values; /* ENUM: most restrictive first, NULL-terminated */
        guint max_items; /* lists: per file */
        const CorralPolicyMember *members; /* OBJECT_LIST: NULL-name terminated */
        /* ALLOW_LIST, DENY_LIST: why a candidate (the one %s) is refused, a sentence ending
         * with who set the rule, N_() */
        const char *blocked;
} CorralPolicyKey;

/* The key table, in the order `corralctl policy show` lists it. (transfer none) */
const CorralPolicyKey *corral_policy_keys (guint *ret_n);
/* The key called name ("vm.maxVcpus"), or NULL. */
const CorralPolicyKey *corral_policy_key_lookup (const char *name);

/* sharedFolders.maxMode and folderModes' values, in the order of their enum: lower is more
 * restrictive. */
typedef enum {
        CORRAL_POLICY_MODE_RO,
        CORRAL_POLICY_MODE_RW_NODELETE,
        CORRAL_POLICY_MODE_RW,
} CorralPolicyMode;

typedef struct _CorralPolicy CorralPolicy;

CorralPolicy *corral_policy_ref (CorralPolicy *policy);
void corral_policy_unref (CorralPolicy *policy);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralPolicy, corral_policy_unref)

/* The main file in use: $CORRAL_MANAGED_POLICY when set and not empty, else the build-time
 * path (-Dmanaged_policy). */
const char *corral_policy_default_path (void);

/* Reads main_path and the drop-ins of its folder's managed.d (see above). Nothing there is
 * an empty policy. (transfer full) */
CorralPolicy *corral_policy_load (const char *main_path, GError **error);
/* corral_policy_load (corral_policy_default_path ()). (transfer full) */
CorralPolicy *corral_policy_load_default (GError **error);
/* The files at paths (NULL-terminated), in that order, as if they were the policy (each must
 * exist): `corralctl policy check`. (transfer full) */
CorralPolicy *corral_policy_load_files (const char *const *paths, GError **error);
/* The same from texts already read: origins[i] names texts[i] (lengths[i] bytes; lengths
 * nullable: NUL-terminated texts) in errors and in the sources. (transfer full) */
CorralPolicy *corral_policy_parse_texts (guint n_texts,
                                         const char *const *origins,
                                         const char *const *texts,
                                         const gsize *lengths,
                                         GError **error);

/* SHA-256, lower-case hex, over the sources (see above). (transfer none) */
const char *corral_policy_get_digest (CorralPolicy *policy);
/* The files read, in order; empty when there is no policy. (transfer none) */
const char *const *corral_policy_get_sources (CorralPolicy *policy);

/* Where a setting came from; valid while the policy lives. */
typedef struct {
        gboolean locked; /* FALSE: a default the person may change */
        const char *const *sources; /* the files it is from (see above); empty when not set */
} CorralPolicySetting;

/* Typed getters, by dotted key name. Each returns whether the key is set; when it is, the
 * value goes to *ret_value (untouched otherwise, so a caller may preset its own default).
 * *ret_setting (nullable) is filled either way (not set: not locked, no sources). Unknown
 * keys and a getter that does not fit the key's kind are programmer errors. Texts and lists
 * are (transfer none). */
gboolean corral_policy_get_bool (CorralPolicy *policy,
                                 const char *key,
                                 gboolean *ret_value,
                                 CorralPolicySetting *ret_setting);
gboolean corral_policy_get_int (CorralPolicy *policy,
                                const char *key,
                                gint64 *ret_value,
                                CorralPolicySetting *ret_setting);
/* ENUM: the value's index in the key's values (0 is the most restrictive). */
gboolean corral_policy_get_enum (CorralPolicy *policy,
                                 const char *key,
                                 guint *ret_index,
                                 CorralPolicySetting *ret_setting);
/* ENUM, VERSION, STRING: the text. */
gboolean corral_policy_get_string (CorralPolicy *policy,
                                   const char *key,
                                   const char **ret_value,
                                   CorralPolicySetting *ret_setting);
/* DENY_LIST: the union, NULL-terminated. */
gboolean corral_policy_get_strv (CorralPolicy *policy,
                                 const char *key,
                                 const char *const **ret_value,
                                 CorralPolicySetting *ret_setting);
/* OBJECT_LIST: a JSON array of validated objects (only the key's members, of their types). */
gboolean corral_policy_get_objects (CorralPolicy *policy,
                                    const char *key,
                                    const cJSON **ret_value,
                                    CorralPolicySetting *ret_setting);

/* One source's allow list. */
typedef struct {
        const char *source;
        const char *const *items; /* NULL-terminated; an empty list allows nothing */
} CorralPolicyAllowList;

/* ALLOW_LIST, for display: one list per file that sets it, in source order, *ret_n of them
 * (0 and NULL when not set). Decisions go through corral_policy_allows. (transfer none) */
const CorralPolicyAllowList *corral_policy_get_allow_lists (CorralPolicy *policy,
                                                            const char *key,
                                                            guint *ret_n,
                                                            CorralPolicySetting *ret_setting);

/* Whether candidate passes key, an ALLOW_LIST (every list allows it; a key not set allows
 * everything) or a DENY_LIST (no entry matches) that has a blocked sentence (not the path
 * patterns, which the file server matches, nor audit.copyTo). Matching follows the key's
 * format (a folder: the entry or inside it; a host: "HOST" or "HOST:PORT" against the
 * patterns; otherwise exact). FALSE with a CORRAL_POLICY_ERROR_BLOCKED sentence for the
 * person.
 *
 * The checks (this one, corral_policy_check_version, corral_policy_max_mode_for_folder)
 * enforce locked settings only: a default is where the person's own setting starts, which
 * the person may change; callers read defaults with the getters. */
gboolean
corral_policy_allows (CorralPolicy *policy, const char *key, const char *candidate, GError **error);

/* minimumVersion against version (NULL: this build's CORRAL_VERSION; only its leading
 * MAJOR.MINOR.PATCH counts). FALSE with CORRAL_POLICY_ERROR_BLOCKED when it is lower. */
gboolean corral_policy_check_version (CorralPolicy *policy, const char *version, GError **error);

/* Whether the absolute folder may be shared at all (sharedFolders.deniedFolders and
 * .allowedFolders; FALSE with CORRAL_POLICY_ERROR_BLOCKED), and if so the widest mode it may
 * be shared in: the lowest of sharedFolders.maxMode and of every sharedFolders.folderModes
 * entry whose folder contains it (CORRAL_POLICY_MODE_RW when none applies). */
gboolean corral_policy_max_mode_for_folder (CorralPolicy *policy,
                                            const char *folder,
                                            CorralPolicyMode *ret_max_mode,
                                            GError **error);

/* Whether folder (absolute, its links resolved) may be shared in mode: the checks of
 * corral_policy_max_mode_for_folder, then mode against the widest it allows (FALSE with a
 * CORRAL_POLICY_ERROR_BLOCKED sentence naming the folder and that access).
 * ret_max_mode (nullable): the widest mode allowed, when the folder may be shared at all.
 * The file server decides with it; the task service asks it first to say so before a
 * workspace starts. */
gboolean corral_policy_check_share (CorralPolicy *policy,
                                    const char *folder,
                                    FsMode mode,
                                    FsMode *ret_max_mode,
                                    GError **error);

/* Whether audit.copyTo names destination ("journal"): the task audit logs' copies. */
gboolean corral_policy_audit_copies_to (CorralPolicy *policy, const char *destination);

/* audit.keepDays (locked): a VM's audit logs outlive it. Where they are kept for the VM folder
 * vm_dir (STATE/corral/vms/NAME): STATE/corral/audit. (transfer full) */
char *corral_policy_audit_archive_dir (const char *vm_dir);

/* Before vm_dir is removed: when policy locks audit.keepDays, or is NULL (it could not be read:
 * it might), its audit logs (audit.jsonl, egress.jsonl) move to ARCHIVE/vm_name-STAMP/. FALSE
 * when they cannot: then the folder must not be removed. Without the rule, TRUE and nothing
 * moves. */
gboolean corral_policy_audit_keep (CorralPolicy *policy,
                                   const char *vm_dir,
                                   const char *vm_name,
                                   GError **error);

/* Removes the kept logs in archive whose last line is older than the locked audit.keepDays
 * (none without the rule); how many were removed, their folders in *removed (nullable). */
guint corral_policy_audit_prune (CorralPolicy *policy, const char *archive, GStrv *removed);

/* Every key, in table order, for `corralctl policy show --json`:
 *   {"digest": HEX, "sources": [FILE...], "settings": {"vm.maxVcpus": {"set": true,
 *    "value": 2, "locked": true, "sources": [FILE...]}, "vm.maxMemoryMib": {"set": false},
 *    ...}}
 * An allow list's value is [{"source": FILE, "allowed": [...]}, ...]. (transfer full) */
char *corral_policy_to_json (CorralPolicy *policy);

G_END_DECLS
