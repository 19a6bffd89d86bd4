/* corralctl-computer.h — corralctl computer VM ACTION…: the computer tool's actions on a VM's
 * screen from the command line (a VM made with "corralctl vm create --screen").
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-computer.h"

int corralctl_computer_main (int argc, char **argv);

/* The computer tool on VM's screen (VM_DIR/vnc.sock), connected and with its first picture;
 * NULL with an error saying why (no screen, not running, no picture in 10 s). */
CorralComputer *corralctl_computer_open (const char *vm, const char *vm_dir, GError **error);
