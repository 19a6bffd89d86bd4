/* fs-managed.c — the "sharedFolders" part of the managed policy (see fs-managed.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-managed.h"

#include "corral-glib-compat.h"
#include "fs-paths.h"
#include "proto.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CORRAL_MANAGED_POLICY_PATH
#define CORRAL_MANAGED_POLICY_PATH "/etc/corral/managed.json"
#endif

/* A protected path longer than this is not a path anybody means. */
#define MAX_PATTERN_LEN 4096

/* clang-format off */
G_DEFINE_QUARK (corral-managed-policy-error-quark, fs_managed_error)
/* clang-format on */

const char *
fs_managed_policy_path (void)
{
        const char *env = g_getenv ("CORRAL_MANAGED_POLICY");

        return env && *env ? env : CORRAL_MANAGED_POLICY_PATH;
}

/* Every message is one whole sentence (translators see it whole) naming the file and ending
 * with what the person can do. */
#define ASK_IT N_ ("Ask your IT department to correct it.")

static gboolean
invalid (GError **error, char *message /* (transfer full) */)
{
        g_set_error_literal (error, FS_MANAGED_ERROR, FS_MANAGED_ERROR_INVALID, message);
        g_free (message);
        return FALSE;
}

/* sharedFolders.KEY: a list of at most FS_MANAGED_MAX_PROTECTED path patterns. */
static gboolean
parse_paths (const cJSON *folders,
             const char *key,
             const char *origin,
             GStrvBuilder *out,
             GError **error)
{
        const cJSON *array = NULL, *item;
        g_autoptr (GError) local = NULL;
        g_autoptr (GPtrArray) patterns = g_ptr_array_new ();

        int r = proto_json_get_array (folders, key, FS_MANAGED_MAX_PROTECTED, &array);
        if (r == -ENOENT)
                return TRUE;
        if (r < 0)
                return invalid (error,
                                g_strdup_printf (_ ("The managed policy %s is not valid: "
                                                    "“sharedFolders.%s” must be a list of at "
                                                    "most 256 paths. %s"),
                                                 origin, key, _ (ASK_IT)));
        cJSON_ArrayForEach (item, array) {
                if (!cJSON_IsString (item) || strlen (item->valuestring) > MAX_PATTERN_LEN)
                        return invalid (
                                error,
                                g_strdup_printf (_ ("The managed policy %s is not valid: every "
                                                    "entry of “sharedFolders.%s” must be a "
                                                    "path of at most 4096 bytes. %s"),
                                                 origin, key, _ (ASK_IT)));
                /* The same check a share's own patterns get, so a bad entry is caught here,
                 * by name. */
                if (!fs_path_pattern_check (item->valuestring, &local))
                        return invalid (error,
                                        g_strdup_printf (_ ("The managed policy %s is not valid "
                                                            "(%s). %s"),
                                                         origin, local->message, _ (ASK_IT)));
                g_ptr_array_add (patterns, item->valuestring);
        }
        g_ptr_array_add (patterns, NULL);
        g_strv_builder_addv (out, (const char **) patterns->pdata);
        return TRUE;
}

gboolean
fs_managed_parse (const char *data,
                  size_t len,
                  const char *origin,
                  char ***ret_protect,
                  char ***ret_hide,
                  GError **error)
{
        g_autoptr (GStrvBuilder) out = g_strv_builder_new ();
        g_autoptr (GStrvBuilder) hide = g_strv_builder_new ();
        const cJSON *folders = NULL, *item;
        cJSON *root = NULL;
        gboolean ok = FALSE;
        int r;

        g_return_val_if_fail (ret_protect != NULL, FALSE);

        if (proto_json_parse ((const uint8_t *) data, len, &root) < 0)
                return invalid (error, g_strdup_printf (_ ("The managed policy %s is not a "
                                                           "valid JSON object. %s"),
                                                        origin, _ (ASK_IT)));
        r = proto_json_get_object (root, "sharedFolders", &folders);
        if (r == -EINVAL) {
                invalid (error, g_strdup_printf (_ ("The managed policy %s is not valid: "
                                                    "“sharedFolders” must be an object. %s"),
                                                 origin, _ (ASK_IT)));
                goto out;
        }
        /* A misspelt setting would silently not apply: every key here must be known. */
        cJSON_ArrayForEach (item, folders) {
                if (!g_str_equal (item->string, "protectedPaths") &&
                    !g_str_equal (item->string, "hiddenPaths")) {
                        invalid (error, g_strdup_printf (_ ("The managed policy %s is not valid: "
                                                            "“sharedFolders” has "
                                                            "an unknown setting “%s”. %s"),
                                                         origin, item->string, _ (ASK_IT)));
                        goto out;
                }
        }
        if (folders && (!parse_paths (folders, "protectedPaths", origin, out, error) ||
                        !parse_paths (folders, "hiddenPaths", origin, hide, error)))
                goto out;
        *ret_protect = g_strv_builder_end (out);
        if (ret_hide)
                *ret_hide = g_strv_builder_end (hide);
        ok = TRUE;
out:
        cJSON_Delete (root);
        return ok;
}

/* Reads a regular file of at most FS_MANAGED_MAX_SIZE bytes; never blocks on a FIFO. */
static int
read_bounded (const char *path, char **ret_data, size_t *ret_len)
{
        g_autofd int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        g_autofree char *buf = NULL;
        size_t len = 0;
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0)
                return -errno;
        if (!S_ISREG (st.st_mode))
                return -EINVAL;
        if (st.st_size > FS_MANAGED_MAX_SIZE)
                return -EFBIG;
        buf = g_malloc (FS_MANAGED_MAX_SIZE + 1);
        for (;;) {
                ssize_t n = read (fd, buf + len, FS_MANAGED_MAX_SIZE + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > FS_MANAGED_MAX_SIZE)
                        return -EFBIG; /* it grew while being read */
        }
        *ret_data = g_steal_pointer (&buf);
        *ret_len = len;
        return 0;
}

gboolean
fs_managed_load (const char *path, char ***ret_protect, GError **error)
{
        return fs_managed_load_all (path, ret_protect, NULL, error);
}

gboolean
fs_managed_load_all (const char *path, char ***ret_protect, char ***ret_hide, GError **error)
{
        g_autofree char *data = NULL;
        size_t len = 0;
        int r;

        g_return_val_if_fail (path != NULL && ret_protect != NULL, FALSE);

        r = read_bounded (path, &data, &len);
        if (r == -ENOENT) {
                *ret_protect = g_new0 (char *, 1);
                if (ret_hide)
                        *ret_hide = g_new0 (char *, 1);
                return TRUE;
        }
        if (r == -EFBIG)
                return invalid (error, g_strdup_printf (_ ("The managed policy %s is larger "
                                                           "than 1 MiB. %s"),
                                                        path, _ (ASK_IT)));
        if (r == -EINVAL)
                return invalid (error, g_strdup_printf (_ ("The managed policy %s is not a "
                                                           "regular file. %s"),
                                                        path, _ (ASK_IT)));
        if (r < 0) {
                g_set_error (error, FS_MANAGED_ERROR, FS_MANAGED_ERROR_UNREADABLE,
                             _ ("Cannot read the managed policy %s (%s). Ask your IT department "
                                "to make it readable."),
                             path, g_strerror (-r));
                return FALSE;
        }
        return fs_managed_parse (data, len, path, ret_protect, ret_hide, error);
}
