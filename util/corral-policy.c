/* corral-policy.c — reading the managed policy's files, merging them, and what callers ask of
 * the result (corral-policy.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy-private.h"

#include "corral-cjson.h"
#include "corral-glib-compat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CORRAL_MANAGED_POLICY_PATH
#define CORRAL_MANAGED_POLICY_PATH "/etc/corral/managed.json"
#endif

/* clang-format off */
G_DEFINE_QUARK (corral-policy-error-quark, corral_policy_error)
/* clang-format on */

static void
merged_clear (PolicyMerged *m)
{
        g_strfreev (m->sources);
        g_free (m->s);
        g_strfreev (m->list);
        for (guint i = 0; i < m->n_allow; i++)
                g_strfreev ((char **) m->allow[i].items);
        g_free (m->allow);
        cJSON_Delete (m->objects);
}

CorralPolicy *
corral_policy_ref (CorralPolicy *policy)
{
        g_return_val_if_fail (policy != NULL, NULL);

        g_atomic_ref_count_inc (&policy->ref);
        return policy;
}

void
corral_policy_unref (CorralPolicy *policy)
{
        if (!policy || !g_atomic_ref_count_dec (&policy->ref))
                return;
        for (guint k = 0; k < policy->n_keys; k++)
                merged_clear (&policy->merged[k]);
        g_free (policy->merged);
        g_strfreev (policy->sources);
        g_free (policy->digest);
        g_free (policy);
}

/* Merging ------------------------------------------------------------------------------------ */

typedef struct {
        const char *origin;
        PolicyValue **values; /* one per key */
} Parsed;

/* The values of key k that count: the locked ones when any is, else the defaults. */
static GPtrArray *
counted (const Parsed *parsed, guint n, guint k, gboolean *ret_locked, GPtrArray *origins)
{
        GPtrArray *out = g_ptr_array_new ();
        gboolean locked = FALSE;

        for (guint i = 0; i < n; i++)
                if (parsed[i].values[k] && parsed[i].values[k]->locked)
                        locked = TRUE;
        for (guint i = 0; i < n; i++) {
                const PolicyValue *v = parsed[i].values[k];
                if (v && v->locked == locked) {
                        g_ptr_array_add (out, (gpointer) v);
                        g_ptr_array_add (origins, (gpointer) parsed[i].origin);
                }
        }
        *ret_locked = locked;
        return out;
}

static gboolean
conflict (const char *a, const char *b, const char *key, GError **error)
{
        g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID,
                     _ ("The managed policies %s and %s set “%s” to different values. %s"), a, b,
                     key, _ (CORRAL_POLICY_ASK_IT));
        return FALSE;
}

/* The single value that wins among vals (BOOL, INT, ENUM, VERSION): its index. */
static guint
winner (const CorralPolicyKey *key, GPtrArray *vals)
{
        guint best = 0;

        for (guint i = 1; i < vals->len; i++) {
                const PolicyValue *v = vals->pdata[i], *b = vals->pdata[best];
                guint64 va[3], vb[3];
                gboolean better = FALSE;

                switch (key->kind) {
                case CORRAL_POLICY_KIND_BOOL:
                        better = v->b == key->restrictive && b->b != key->restrictive;
                        break;
                case CORRAL_POLICY_KIND_INT:
                        better = key->higher_wins ? v->i > b->i : v->i < b->i;
                        break;
                case CORRAL_POLICY_KIND_ENUM:
                        better = v->i < b->i;
                        break;
                case CORRAL_POLICY_KIND_VERSION:
                        policy_version_parse (v->s, TRUE, va);
                        policy_version_parse (b->s, TRUE, vb);
                        better = policy_version_compare (va, vb) > 0;
                        break;
                default:
                        g_assert_not_reached ();
                }
                if (better)
                        best = i;
        }
        return best;
}

static gboolean
same_value (const CorralPolicyKey *key, const PolicyValue *a, const PolicyValue *b)
{
        if (key->kind == CORRAL_POLICY_KIND_BOOL)
                return a->b == b->b;
        if (key->kind == CORRAL_POLICY_KIND_INT || key->kind == CORRAL_POLICY_KIND_ENUM)
                return a->i == b->i;
        return g_str_equal (a->s, b->s);
}

/* BOOL, INT, ENUM, VERSION, STRING: one value, from the files that gave it. */
static gboolean
merge_single (const CorralPolicyKey *key,
              PolicyMerged *m,
              GPtrArray *vals,
              GPtrArray *origins,
              GError **error)
{
        g_autoptr (GStrvBuilder) from = g_strv_builder_new ();
        const PolicyValue *w;

        if (key->kind == CORRAL_POLICY_KIND_STRING) {
                for (guint i = 1; i < vals->len; i++)
                        if (!same_value (key, vals->pdata[0], vals->pdata[i]))
                                return conflict (origins->pdata[0], origins->pdata[i], key->name,
                                                 error);
                w = vals->pdata[0];
        } else {
                w = vals->pdata[winner (key, vals)];
        }
        for (guint i = 0; i < vals->len; i++)
                if (same_value (key, w, vals->pdata[i]))
                        g_strv_builder_add (from, origins->pdata[i]);
        m->b = w->b;
        m->i = w->i;
        m->s = g_strdup (w->s);
        m->sources = g_strv_builder_end (from);
        return TRUE;
}

/* Object lists: concatenated; a "name" is used once across the files. */
static gboolean
merge_objects (const CorralPolicyKey *key,
               PolicyMerged *m,
               GPtrArray *vals,
               GPtrArray *origins,
               GError **error)
{
        g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
        g_autoptr (cJSON) all = cJSON_CreateArray ();

        for (guint i = 0; i < vals->len; i++) {
                const PolicyValue *v = vals->pdata[i];
                const cJSON *item;

                cJSON_ArrayForEach (item, v->objects) {
                        const char *name = cJSON_GetStringValue (
                                cJSON_GetObjectItemCaseSensitive (item, "name"));
                        const char *first = name ? g_hash_table_lookup (names, name) : NULL;

                        if (first) {
                                g_set_error (error, CORRAL_POLICY_ERROR,
                                             CORRAL_POLICY_ERROR_INVALID,
                                             _ ("The managed policies %s and %s both set “%s” "
                                                "named “%s”. %s"),
                                             first, (const char *) origins->pdata[i], key->name,
                                             name, _ (CORRAL_POLICY_ASK_IT));
                                return FALSE;
                        }
                        if (name)
                                g_hash_table_insert (names, (gpointer) name, origins->pdata[i]);
                        cJSON_AddItemToArray (all, cJSON_Duplicate (item, TRUE));
                }
        }
        m->objects = g_steal_pointer (&all);
        return TRUE;
}

static void
merge_lists (const CorralPolicyKey *key, PolicyMerged *m, GPtrArray *vals, GPtrArray *origins)
{
        if (key->kind == CORRAL_POLICY_KIND_ALLOW_LIST) {
                m->n_allow = vals->len;
                m->allow = g_new0 (CorralPolicyAllowList, vals->len);
                for (guint i = 0; i < vals->len; i++) {
                        const PolicyValue *v = vals->pdata[i];
                        m->allow[i].items = (const char *const *) g_strdupv (v->list);
                }
        } else {
                g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
                g_autoptr (GStrvBuilder) all = g_strv_builder_new ();

                for (guint i = 0; i < vals->len; i++) {
                        const PolicyValue *v = vals->pdata[i];
                        for (guint j = 0; v->list[j]; j++)
                                if (g_hash_table_add (seen, v->list[j]))
                                        g_strv_builder_add (all, v->list[j]);
                }
                m->list = g_strv_builder_end (all);
        }
        g_ptr_array_add (origins, NULL);
        m->sources = g_strdupv ((char **) origins->pdata);
        g_ptr_array_remove_index (origins, origins->len - 1);
}

static gboolean
merge_key (CorralPolicy *policy,
           const CorralPolicyKey *key,
           const Parsed *parsed,
           guint n,
           GError **error)
{
        guint k = policy_key_index (key);
        PolicyMerged *m = &policy->merged[k];
        g_autoptr (GPtrArray) origins = g_ptr_array_new ();
        g_autoptr (GPtrArray) vals = counted (parsed, n, k, &m->locked, origins);

        if (vals->len == 0)
                return TRUE;
        m->set = TRUE;
        switch (key->kind) {
        case CORRAL_POLICY_KIND_DENY_LIST:
        case CORRAL_POLICY_KIND_ALLOW_LIST:
                merge_lists (key, m, vals, origins);
                break;
        case CORRAL_POLICY_KIND_OBJECT_LIST:
                if (!merge_objects (key, m, vals, origins, error))
                        return FALSE;
                g_ptr_array_add (origins, NULL);
                m->sources = g_strdupv ((char **) origins->pdata);
                break;
        default:
                return merge_single (key, m, vals, origins, error);
        }
        return TRUE;
}

/* The policy's own copy of the source names: the allow lists point at them. */
static void
link_allow_sources (CorralPolicy *policy)
{
        for (guint k = 0; k < policy->n_keys; k++) {
                PolicyMerged *m = &policy->merged[k];
                for (guint i = 0; i < m->n_allow; i++)
                        m->allow[i].source = m->sources[i];
        }
}

static char *
digest_of (guint n, const char *const *origins, const char *const *texts, const gsize *lengths)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);

        for (guint i = 0; i < n; i++) {
                guint64 be = GUINT64_TO_BE ((guint64) lengths[i]);

                g_checksum_update (sum, (const guchar *) origins[i], strlen (origins[i]) + 1);
                g_checksum_update (sum, (const guchar *) &be, sizeof be);
                g_checksum_update (sum, (const guchar *) texts[i], lengths[i]);
        }
        return g_strdup (g_checksum_get_string (sum));
}

static void
parsed_free (Parsed *parsed, guint n, guint n_keys)
{
        for (guint i = 0; i < n; i++) {
                for (guint k = 0; parsed[i].values && k < n_keys; k++)
                        policy_value_free (parsed[i].values[k]);
                g_free (parsed[i].values);
        }
        g_free (parsed);
}

CorralPolicy *
corral_policy_parse_texts (guint n_texts,
                           const char *const *origins,
                           const char *const *texts,
                           const gsize *lengths,
                           GError **error)
{
        g_autoptr (CorralPolicy) policy = NULL;
        g_autofree gsize *lens = NULL;
        const CorralPolicyKey *keys;
        Parsed *parsed;
        gboolean ok = TRUE;

        g_return_val_if_fail (n_texts == 0 || (origins != NULL && texts != NULL), NULL);

        policy = g_new0 (CorralPolicy, 1);
        g_atomic_ref_count_init (&policy->ref);
        keys = corral_policy_keys (&policy->n_keys);
        policy->merged = g_new0 (PolicyMerged, policy->n_keys);
        lens = g_new0 (gsize, n_texts + 1);
        parsed = g_new0 (Parsed, n_texts + 1);
        for (guint i = 0; i < n_texts; i++) {
                lens[i] = lengths ? lengths[i] : strlen (texts[i]);
                parsed[i].origin = origins[i];
                parsed[i].values = g_new0 (PolicyValue *, policy->n_keys);
                if (ok &&
                    !policy_source_parse (origins[i], texts[i], lens[i], parsed[i].values, error))
                        ok = FALSE;
        }
        for (guint k = 0; ok && k < policy->n_keys; k++)
                ok = merge_key (policy, &keys[k], parsed, n_texts, error);
        parsed_free (parsed, n_texts, policy->n_keys);
        if (!ok)
                return NULL;
        link_allow_sources (policy);
        policy->sources = g_new0 (char *, n_texts + 1);
        for (guint i = 0; i < n_texts; i++)
                policy->sources[i] = g_strdup (origins[i]);
        policy->digest = digest_of (n_texts, origins, texts, lens);
        return g_steal_pointer (&policy);
}

/* Reading ------------------------------------------------------------------------------------ */

/* A regular file of at most CORRAL_POLICY_MAX_SIZE bytes, symlinks followed; never blocks on
 * a FIFO. Negative errno: -EINVAL not a regular file, -EFBIG too large. */
static int
read_bounded (int dir_fd, const char *path, char **ret_data, gsize *ret_len)
{
        g_autofd int fd = openat (dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        g_autofree char *buf = NULL;
        gsize len = 0;
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0)
                return -errno;
        if (!S_ISREG (st.st_mode))
                return -EINVAL;
        if (st.st_size > CORRAL_POLICY_MAX_SIZE)
                return -EFBIG;
        buf = g_malloc (CORRAL_POLICY_MAX_SIZE + 1);
        for (;;) {
                ssize_t n = read (fd, buf + len, CORRAL_POLICY_MAX_SIZE + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (gsize) n;
                if (len > CORRAL_POLICY_MAX_SIZE)
                        return -EFBIG; /* it grew while being read */
        }
        *ret_data = g_steal_pointer (&buf);
        *ret_len = len;
        return 0;
}

typedef struct {
        GPtrArray *paths; /* char * */
        GPtrArray *texts; /* char * */
        GArray *lengths; /* gsize */
} Files;

static void
files_clear (Files *f)
{
        g_clear_pointer (&f->paths, g_ptr_array_unref);
        g_clear_pointer (&f->texts, g_ptr_array_unref);
        g_clear_pointer (&f->lengths, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Files, files_clear)

static void
files_init (Files *f)
{
        f->paths = g_ptr_array_new_with_free_func (g_free);
        f->texts = g_ptr_array_new_with_free_func (g_free);
        f->lengths = g_array_new (FALSE, FALSE, sizeof (gsize));
}

/* Reads name (relative to dir_fd) and adds it to f as path. */
static gboolean
read_source (Files *f,
             int dir_fd,
             const char *name,
             const char *path,
             gboolean missing_ok,
             GError **error)
{
        char *data = NULL;
        gsize len = 0;
        int r = read_bounded (dir_fd, name, &data, &len);

        if (r == -ENOENT && missing_ok)
                return TRUE;
        if (r == -EFBIG)
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID,
                             _ ("The managed policy %s is larger than 1 MiB. %s"), path,
                             _ (CORRAL_POLICY_ASK_IT));
        else if (r == -EINVAL)
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID,
                             _ ("The managed policy %s is not a regular file. %s"), path,
                             _ (CORRAL_POLICY_ASK_IT));
        else if (r < 0)
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_UNREADABLE,
                             _ ("Cannot read the managed policy %s (%s). %s"), path,
                             g_strerror (-r), _ (CORRAL_POLICY_ASK_IT));
        if (r < 0)
                return FALSE;
        g_ptr_array_add (f->paths, g_strdup (path));
        g_ptr_array_add (f->texts, data);
        g_array_append_val (f->lengths, len);
        return TRUE;
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
        return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static gboolean
is_drop_in_name (const char *name)
{
        return name[0] != '.' && g_str_has_suffix (name, ".json");
}

static gboolean
folder_error (const char *dir, int errsv, GError **error)
{
        g_set_error (error, CORRAL_POLICY_ERROR,
                     errsv == ENOTDIR ? CORRAL_POLICY_ERROR_INVALID
                                      : CORRAL_POLICY_ERROR_UNREADABLE,
                     _ ("Cannot read the managed policy folder %s (%s). %s"), dir,
                     g_strerror (errsv), _ (CORRAL_POLICY_ASK_IT));
        return FALSE;
}

/* managed.d: every *.json not starting with '.', in byte order of name. */
static gboolean
read_drop_ins (Files *f, const char *dir, GError **error)
{
        g_autofd int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
        DIR *d;
        struct dirent *e;
        int list_fd;

        if (fd < 0 && errno == ENOENT)
                return TRUE;
        if (fd < 0 || (list_fd = fcntl (fd, F_DUPFD_CLOEXEC, 3)) < 0)
                return folder_error (dir, errno, error);
        if (!(d = fdopendir (list_fd))) {
                int errsv = errno;
                close (list_fd);
                return folder_error (dir, errsv, error);
        }
        while ((e = readdir (d)) != NULL) {
                if (!is_drop_in_name (e->d_name))
                        continue;
                if (names->len == CORRAL_POLICY_MAX_DROP_INS) {
                        closedir (d);
                        g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID,
                                     _ ("The managed policy folder %s holds more than %u "
                                        "policy files. %s"),
                                     dir, CORRAL_POLICY_MAX_DROP_INS, _ (CORRAL_POLICY_ASK_IT));
                        return FALSE;
                }
                g_ptr_array_add (names, g_strdup (e->d_name));
        }
        closedir (d);
        g_ptr_array_sort (names, compare_names);
        for (guint i = 0; i < names->len; i++) {
                g_autofree char *path = g_build_filename (dir, names->pdata[i], NULL);

                if (!read_source (f, fd, names->pdata[i], path, FALSE, error))
                        return FALSE;
        }
        return TRUE;
}

static CorralPolicy *
parse_files (Files *f, GError **error)
{
        g_ptr_array_add (f->paths, NULL);
        return corral_policy_parse_texts (f->texts->len, (const char *const *) f->paths->pdata,
                                          (const char *const *) f->texts->pdata,
                                          (const gsize *) (gpointer) f->lengths->data, error);
}

const char *
corral_policy_default_path (void)
{
        const char *env = g_getenv ("CORRAL_MANAGED_POLICY");

        return env && *env ? env : CORRAL_MANAGED_POLICY_PATH;
}

CorralPolicy *
corral_policy_load (const char *main_path, GError **error)
{
        g_autofree char *folder = NULL, *drop_ins = NULL;
        g_auto (Files) f = { 0 };

        g_return_val_if_fail (main_path != NULL, NULL);

        folder = g_path_get_dirname (main_path);
        drop_ins = g_build_filename (folder, "managed.d", NULL);
        files_init (&f);
        if (!read_source (&f, AT_FDCWD, main_path, main_path, TRUE, error) ||
            !read_drop_ins (&f, drop_ins, error))
                return NULL;
        return parse_files (&f, error);
}

CorralPolicy *
corral_policy_load_default (GError **error)
{
        return corral_policy_load (corral_policy_default_path (), error);
}

CorralPolicy *
corral_policy_load_files (const char *const *paths, GError **error)
{
        g_auto (Files) f = { 0 };

        g_return_val_if_fail (paths != NULL, NULL);

        files_init (&f);
        for (guint i = 0; paths[i]; i++)
                if (!read_source (&f, AT_FDCWD, paths[i], paths[i], FALSE, error))
                        return NULL;
        return parse_files (&f, error);
}
