/* fs-audit.c — see fs-audit.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-audit.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

struct _FsAudit {
        int fd;
};

FsAudit *
fs_audit_open (const char *path, GError **error)
{
        FsAudit *a = g_new0 (FsAudit, 1);

        a->fd = -1;
        if (path) {
                a->fd = open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (a->fd < 0) {
                        int errsv = errno;
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                                     "Cannot open the audit log %s: %s", path, g_strerror (errsv));
                        g_free (a);
                        return NULL;
                }
        }
        return a;
}

void
fs_audit_close (FsAudit *a)
{
        if (!a)
                return;
        if (a->fd >= 0)
                close (a->fd);
        g_free (a);
}

static void
add_string (cJSON *obj, const char *key, const char *value)
{
        g_autofree char *valid = NULL;

        if (!value)
                return;
        valid = g_utf8_make_valid (value, -1);
        cJSON_AddStringToObject (obj, key, valid);
}

void
fs_audit_write (FsAudit *a, const FsAuditRecord *rec)
{
        g_autoptr (GDateTime) now = NULL;
        g_autofree char *time = NULL;
        cJSON *obj;
        char *text;
        size_t len;

        if (!a || a->fd < 0)
                return;

        now = g_date_time_new_now_utc ();
        time = g_date_time_format (now, "%Y-%m-%dT%H:%M:%S.%fZ");
        obj = cJSON_CreateObject ();
        add_string (obj, "time", time);
        add_string (obj, "source", "files");
        add_string (obj, "share", rec->share);
        add_string (obj, "op", rec->op);
        add_string (obj, "path", rec->path);
        add_string (obj, "path2", rec->path2);
        add_string (obj, "result", rec->result);
        add_string (obj, "rule", rec->rule);
        if (rec->errnum)
                add_string (obj, "errno", proto_errno_name (rec->errnum));
        add_string (obj, "message", rec->message);
        if (rec->size >= 0)
                cJSON_AddNumberToObject (obj, "size", (double) rec->size);

        text = cJSON_PrintUnformatted (obj);
        cJSON_Delete (obj);
        if (!text)
                return;
        len = strlen (text);
        text[len] = '\n'; /* replaces the terminator: one write, one line */
        if (write (a->fd, text, len + 1) < 0)
                g_warning ("Cannot write the audit log: %s", g_strerror (errno));
        cJSON_free (text);
}
