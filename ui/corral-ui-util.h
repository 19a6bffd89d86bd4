/* corral-ui-util.h — small helpers shared by the widgets: accessible names, labels, dates.
 * (The share modes' words are util/corral-share-mode.h's; worker threads util/corral-thread.h.)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-llm.h"

#include "corral-share-mode.h"
#include "corral-thread.h"

G_BEGIN_DECLS

/* Sets the name screen readers announce (and a tooltip when the widget has no visible text). */
void corral_ui_set_accessible_label (GtkWidget *widget, const char *label);

/* A GtkLabel for text that came from outside (never markup), wrapping, selectable. */
GtkWidget *corral_ui_plain_label (const char *text, gboolean selectable);

/* A warning in words with a warning icon, as plain text (wrapping). (transfer floating) */
GtkWidget *corral_ui_warning_new (const char *text);

/* What the person should know before sharing path when it holds far more than a task needs:
 * the whole computer, the home folder or a folder that contains it (translated); NULL for
 * other folders. */
const char *corral_ui_folder_warning (const char *path);

/* A moment (seconds since the epoch) as every page shows one: the locale's date (GLib's "%x"),
 * and with with_time its hours and minutes. (transfer full) */
char *corral_ui_format_when (gint64 unix_time, gboolean with_time);

/* A side panel's body: a stack with an "empty" status page (icon, title, description) and a
 * "list" page holding a boxed list box (ret_list, named label for screen readers) in a
 * scroller. (transfer floating) the stack */
GtkWidget *corral_ui_list_stack_new (const char *icon_name,
                                     const char *title,
                                     const char *description,
                                     const char *list_label,
                                     GtkWidget **ret_list);

/* The words for a model key the provider refused when it was entered. */
const char *corral_ui_key_refused_text (void);

/* A provider to check a model key entered for kind with (corral_llm_provider_check_key_async):
 * the base URL the environment sets, else base_url (nullable: the kind's default). (transfer
 * full) NULL with error set for a key no header may carry. */
CorralLlmProvider *corral_ui_key_checker_new (CorralLlmProviderKind kind,
                                              const char *base_url,
                                              const char *key,
                                              GError **error);

G_END_DECLS
