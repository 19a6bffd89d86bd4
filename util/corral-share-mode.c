/* corral-share-mode.c — the share modes and their words (corral-share-mode.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-share-mode.h"

#include <glib/gi18n.h>

gboolean
fs_mode_parse (const char *text, FsMode *ret)
{
        if (g_strcmp0 (text, "ro") == 0)
                *ret = FS_MODE_RO;
        else if (g_strcmp0 (text, "rw") == 0)
                *ret = FS_MODE_RW;
        else if (g_strcmp0 (text, "rw-nodelete") == 0)
                *ret = FS_MODE_RW_NODELETE;
        else
                return FALSE;
        return TRUE;
}

const char *
fs_mode_to_string (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return "ro";
        case FS_MODE_RW:
                return "rw";
        case FS_MODE_RW_NODELETE:
                return "rw-nodelete";
        }
        g_return_val_if_reached ("ro");
}

const char *
fs_mode_describe (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return _ ("Can read");
        case FS_MODE_RW:
                return _ ("Can edit");
        case FS_MODE_RW_NODELETE:
                return _ ("Can edit, but not delete");
        }
        g_return_val_if_reached ("");
}

const char *
fs_mode_explain (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return _ ("The assistant can open your files but cannot change anything.");
        case FS_MODE_RW:
                return _ ("The assistant can create, change and delete files in this folder.");
        case FS_MODE_RW_NODELETE:
                return _ ("The assistant can create and change files; deleting one needs your "
                          "approval.");
        }
        g_return_val_if_reached ("");
}
