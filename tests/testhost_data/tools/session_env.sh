# Sourced by bash (BASH_ENV) for every command run over SSH on the test host: sshd's SetEnv sets
# PATH, SHLVL=1 (so Debian's bash does not read ~/.bashrc for SSH commands) and BASH_ENV=this file.
# It records the command line and, while TestHost.remove_tool hides a tool that also exists in
# /usr/bin, swaps PATH for one that lacks it.
printf '%s\0' "$BASH_EXECUTION_STRING" >> @ROOT_Q@/ssh_commands.log
if [ -r @ROOT_Q@/session_path ]; then
    read -r PATH < @ROOT_Q@/session_path
    export PATH
fi
unset BASH_ENV
