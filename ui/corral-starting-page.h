/* corral-starting-page.h — staged progress while a task's workspace starts, and an honest error
 * page (what went wrong, what to install, in one line) when it cannot.
 *
 * Signals: ::retry and ::back, from the error page's buttons.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-launcher.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_STARTING_PAGE (corral_starting_page_get_type ())
G_DECLARE_FINAL_TYPE (CorralStartingPage, corral_starting_page, CORRAL, STARTING_PAGE, GtkWidget)

GtkWidget *corral_starting_page_new (void);
void corral_starting_page_reset (CorralStartingPage *self);
void corral_starting_page_set_progress (CorralStartingPage *self,
                                        CorralLaunchStage stage,
                                        double fraction,
                                        const char *detail);
CorralLaunchStage corral_starting_page_get_stage (CorralStartingPage *self);
/* Shows the error page for error (corral_launch_error_explain). */
void corral_starting_page_show_error (CorralStartingPage *self, const GError *error);
gboolean corral_starting_page_get_failed (CorralStartingPage *self);

G_END_DECLS
