/* fuzz-journal.c — libFuzzer target for the change journal reader (fs-journal.h): the journal
 * lies in the person's state folder and is read back by the app, corralctl and undo, so it is
 * untrusted bytes. It must never crash; every record it accepts writes back to a line that reads
 * the same; the changes folded from the records name valid paths, each path once per kind.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-journal.h"

#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
assert_same (const FsJournalRecord *a, const FsJournalRecord *b)
{
        if (a->type != b->type || g_strcmp0 (a->share, b->share) || g_strcmp0 (a->path, b->path) ||
            g_strcmp0 (a->to, b->to) || g_strcmp0 (a->copy, b->copy) ||
            g_strcmp0 (a->lost, b->lost) || a->kind != b->kind || a->replaced != b->replaced ||
            a->exchange != b->exchange || a->has_mode != b->has_mode || a->mode != b->mode ||
            a->has_mtime != b->has_mtime ||
            (a->has_mtime && (a->mtime != b->mtime || a->mtime_ns != b->mtime_ns)) ||
            a->time != b->time)
                abort ();
        if ((a->type == FS_JOURNAL_KEEP || a->type == FS_JOURNAL_DELETE ||
             a->type == FS_JOURNAL_WROTE) &&
            a->size != b->size)
                abort ();
}

static bool
path_ok (const char *p)
{
        return p && *p && p[0] != '/' && !strstr (p, "//") && !g_str_has_suffix (p, "/") &&
               strcmp (p, "..") && !g_str_has_prefix (p, "../") && !strstr (p, "/../") &&
               !g_str_has_suffix (p, "/..");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) records = fs_journal_parse ((const char *) data, size, &error);
        g_autoptr (GPtrArray) changes = NULL;

        if (!records) {
                if (!error || !error->message[0])
                        abort ();
                return 0;
        }
        for (guint i = 0; i < records->len; i++) {
                const FsJournalRecord *r = records->pdata[i];
                g_autofree char *line = fs_journal_format (r);
                g_autoptr (GError) again_error = NULL;
                g_autoptr (FsJournalRecord) again =
                        fs_journal_parse_line (line, strlen (line) - 1, &again_error);

                if (!again)
                        abort ();
                assert_same (r, again);
        }
        changes = fs_journal_changes (records);
        g_hash_table_unref (fs_journal_share_folders (records));
        for (guint i = 0; i < changes->len; i++) {
                const FsJournalChange *c = changes->pdata[i];

                if (!path_ok (c->path) || (c->origin && !path_ok (c->origin)) || !c->share[0])
                        abort ();
                if (c->kind == FS_JOURNAL_RENAMED && !c->origin)
                        abort ();
                if (c->copy && c->lost)
                        abort ();
        }
        return 0;
}
