// Only for building this module on its own (./gradlew assembleRelease here).
// An app that includes it (README.md) brings its own plugin versions and
// repositories, and this file is not read.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
    plugins {
        id("com.android.library") version "8.7.3"
    }
}

dependencyResolutionManagement {
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "valet"
