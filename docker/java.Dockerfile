# The Java task image: Debian's OpenJDK 17 (headless), Ant and Maven, and the JUnit 4 and 5
# jars (/usr/share/java), plus git. Built by `aci images build` on top of the offline base image;
# with a registry, pass BASE=debian:bookworm (see README). Ant finds JUnit through
# /usr/share/ant/lib; Maven runs offline (`-o`) against what Debian ships in /usr/share/maven-repo.
# No Gradle: Debian's is 4.4.1, 141 more packages, and no test uses it.
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless ant ant-optional maven junit4 junit5 libhamcrest-java git ca-certificates >/dev/null \
 && ln -s /usr/share/java/junit4.jar /usr/share/java/hamcrest-core.jar /usr/share/ant/lib/ \
 && rm -rf /var/lib/apt/lists/*
LABEL aci.image=java
