int main(){int a=2147483647; volatile int b=1; return a+b;}
