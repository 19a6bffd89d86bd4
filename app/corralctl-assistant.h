/* corralctl-assistant.h — `corralctl assistant VM "task"`: the assistant loop on a terminal.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

int corralctl_assistant_main (int argc, char **argv);
