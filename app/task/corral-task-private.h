/* corral-task-private.h — what the task service's files share (not for its users).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

/* For a chain of steps that hands one reference of task along: with an error, returns it on
 * task, drops that reference and says TRUE (the chain ends); without one, FALSE. */
static inline gboolean
corral_task_fail_if (GTask *task, GError *error)
{
        if (!error)
                return FALSE;
        g_task_return_error (task, error);
        g_object_unref (task);
        return TRUE;
}
